"""`manage.py benchmark indexing|retrieval`: figures measured on a throw-away memory."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Measure indexing throughput or auto-retrieval latency on a throw-away memory."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="which", required=True)
        indexing = sub.add_parser("indexing", help="Documents embedded and indexed per second.")
        indexing.add_argument("--n", type=int, default=1000)
        indexing.add_argument("--batch-size", type=int, default=32)
        indexing.add_argument(
            "--per-row", type=int, default=100, help="Rows timed one by one (the task path)."
        )
        retrieval = sub.add_parser("retrieval", help="auto_retrieve latency per stage.")
        retrieval.add_argument("--memories", type=int, default=10_000)
        retrieval.add_argument("--queries", type=int, default=500)

    def handle(self, *args, **options):
        from memory.services.throwaway import throwaway_memory

        out = self.stdout.write
        with throwaway_memory():
            if options["which"] == "indexing":
                from memory.services.benchmarks import indexing_benchmark

                if options["n"] < 1 or options["batch_size"] < 1:
                    raise CommandError("--n et --batch-size doivent être au moins 1.")
                indexing_benchmark(
                    n=options["n"],
                    batch_size=options["batch_size"],
                    per_row=min(options["per_row"], options["n"]),
                    out=out,
                )
            else:
                from memory.services.benchmarks import retrieval_benchmark

                retrieval_benchmark(
                    memories=options["memories"], queries=options["queries"], out=out
                )
