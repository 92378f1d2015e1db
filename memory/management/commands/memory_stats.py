"""Counts per tier, collection and indexing state (the same selector as GET /api/memory/stats)."""

import json

from django.core.management.base import BaseCommand
from django.core.serializers.json import DjangoJSONEncoder


class Command(BaseCommand):
    help = "Print counts per tier, collection and indexing state, and the last indexing time."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print JSON.")
        parser.add_argument("--no-vectors", action="store_true", help="Do not open Qdrant.")

    def handle(self, *args, **options):
        from memory.selectors import memory_stats_get

        stats = memory_stats_get(include_vectors=not options["no_vectors"])
        if options["json"]:
            self.stdout.write(
                json.dumps(stats, cls=DjangoJSONEncoder, indent=2, ensure_ascii=False)
            )
            return
        for tier in ("facts", "messages", "summaries"):
            row = stats[tier]
            counts = ", ".join(f"{k} {v}" for k, v in row.items() if k != "index")
            states = ", ".join(f"{k} {v}" for k, v in row["index"].items())
            self.stdout.write(f"{tier}: {counts} | indexation: {states}")
        vectors = stats["vectors"]
        collections = ", ".join(
            f"{k} {v if v is not None else '?'}" for k, v in vectors["collections"].items()
        )
        status = vectors["status"] + (f" ({vectors['error']})" if vectors.get("error") else "")
        self.stdout.write(f"qdrant: {status} | {collections}")
        self.stdout.write(f"retrievals: {stats['retrievals']['total']}")
        self.stdout.write(f"dernière indexation: {stats['last_indexed_at'] or 'jamais'}")
        self.stdout.write(f"tâches de fond: {stats['jobs']['states']}")
        for job in stats["jobs"]["failed"][:5]:
            self.stdout.write(f"  tâche en échec {job['key']} : {job['error']}")
        for failure in stats["index_failures"][:5]:
            self.stdout.write(
                f"  échec d'indexation {failure['kind']} {failure['id']} "
                f"({failure['attempts']} tentatives) : {failure['error']}"
            )
