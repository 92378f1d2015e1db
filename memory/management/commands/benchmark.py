"""`manage.py benchmark indexing|retrieval|context`: figures measured on a throw-away memory."""

from __future__ import annotations

from django.core.management.base import CommandError

from memory.management.french import FrenchCommand


class Command(FrenchCommand):
    help = (
        "Mesure le débit d'indexation, la latence de l'auto-retrieval, celle de l'endpoint "
        "context en HTTP ou le débit d'import, sur une mémoire jetable."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="which", required=True)
        indexing = sub.add_parser("indexing", help="Documents vectorisés et indexés par seconde.")
        indexing.add_argument("--n", type=int, default=1000)
        indexing.add_argument("--batch-size", type=int, default=32)
        indexing.add_argument(
            "--per-row",
            type=int,
            default=100,
            help="Lignes chronométrées une à une (comme une tâche les indexe).",
        )
        serve = sub.add_parser(
            "serve-indexing",
            help="Lignes indexées par seconde par un vrai `serve` alimenté en HTTP, comparées au "
            "plancher (embed + upsert seuls).",
        )
        serve.add_argument("--n", type=int, default=1000)
        retrieval = sub.add_parser("retrieval", help="Latence d'auto_retrieve par étape.")
        retrieval.add_argument("--memories", type=int, default=10_000)
        retrieval.add_argument("--queries", type=int, default=500)
        retrieval.add_argument(
            "--live",
            type=int,
            default=0,
            help="Messages d'un salon observé placés dans la mémoire live.",
        )
        retrieval.add_argument(
            "--notes",
            type=int,
            default=0,
            help="Notes créées dans le dossier du coffre (50 par dossier).",
        )
        retrieval.add_argument(
            "--concurrency",
            default="",
            help="Lancer aussi le pré-hook avec autant d'appelants simultanés, par exemple 1,2,4.",
        )
        retrieval.add_argument(
            "--calls", type=int, default=200, help="Appels par niveau de concurrence."
        )
        context = sub.add_parser(
            "context", help="Latence de POST /api/memory/context en HTTP (p50/p95)."
        )
        context.add_argument("--memories", type=int, default=10_000)
        context.add_argument("--queries", type=int, default=300)
        context.add_argument("--threads", type=int, default=4, help="Threads de waitress.")
        context.add_argument(
            "--gap-ms",
            type=int,
            default=100,
            help="Pause avant chaque requête : les messages arrivent espacés, pas à la chaîne.",
        )
        importing = sub.add_parser(
            "import", help="Débit de memory_import (lignes/s, enregistrements/s)."
        )
        importing.add_argument("--n", type=int, default=2000, help="Échanges (faits : n/2).")
        history = sub.add_parser(
            "history",
            help="Opérations sur les tables annexes (/costs, injections récentes, vérification "
            "de la compaction, recherche textuelle) au dixième de l'historique et à taille réelle.",
        )
        history.add_argument("--usage", type=int, default=300_000)
        history.add_argument("--logs", type=int, default=200_000)
        history.add_argument("--messages", type=int, default=300_000)
        history.add_argument("--facts", type=int, default=20_000)
        history.add_argument("--repeat", type=int, default=30)

    def handle(self, *args, **options):
        from memory.services.throwaway import throwaway_memory

        out = self.stdout.write
        if options["which"] == "serve-indexing":
            from memory.services.bench_serve import serve_indexing_benchmark

            if options["n"] < 1:
                raise CommandError("--n doit être au moins 1.")
            serve_indexing_benchmark(n=options["n"], out=out)
            return
        if options["which"] == "import":
            from memory.services.benchmarks import import_benchmark

            if options["n"] < 1:
                raise CommandError("--n doit être au moins 1.")
            import_benchmark(n=options["n"], out=out)
            return
        if options["which"] == "retrieval":
            from memory.services.bench_concurrency import (
                concurrency_levels_parse,
                concurrency_measure,
            )

            try:  # checked before the throw-away memory is built
                levels = concurrency_levels_parse(options["concurrency"])
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            if options["calls"] < 1:
                raise CommandError("--calls doit être au moins 1.")
            if min(options["memories"], options["queries"]) < 1:
                raise CommandError("--memories et --queries doivent être au moins 1.")
            if options["notes"] < 0 or options["live"] < 0:
                raise CommandError("--notes et --live ne peuvent pas être négatifs.")
        if options["which"] == "context" and options["gap_ms"] < 0:
            raise CommandError("--gap-ms ne peut pas être négatif.")
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
            elif options["which"] == "history":
                from memory.services.bench_history import history_benchmark

                sizes = ("usage", "logs", "messages", "facts", "repeat")
                if min(options[name] for name in sizes) < 1:
                    raise CommandError(
                        "--usage, --logs, --messages, --facts et --repeat doivent être au moins 1."
                    )
                history_benchmark(**{name: options[name] for name in sizes}, out=out)
            elif options["which"] == "context":
                from memory.services.bench_context import context_benchmark

                if min(options["memories"], options["queries"], options["threads"]) < 1:
                    raise CommandError(
                        "--memories, --queries et --threads doivent être au moins 1."
                    )
                context_benchmark(
                    memories=options["memories"],
                    queries=options["queries"],
                    threads=options["threads"],
                    gap_ms=options["gap_ms"],
                    out=out,
                )
            else:
                from memory.services.benchmarks import retrieval_benchmark

                retrieval_benchmark(
                    memories=options["memories"],
                    queries=options["queries"],
                    live=options["live"],
                    notes=options["notes"],
                    out=out,
                )
                if levels:
                    concurrency_measure(levels=levels, calls=options["calls"], out=out)
