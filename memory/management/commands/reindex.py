"""Rebuild the Qdrant collections from SQLite (T1 is the source of truth)."""

from __future__ import annotations

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand
from memory.management.progress import ProgressBars


class Command(FrenchCommand):
    help = (
        "Reconstruit Qdrant depuis SQLite ; peut être interrompu et relancé sans risque. "
        "Pendant que serve tourne, c'est serve qui le fait."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--collection",
            choices=["conversations", "knowledge", "live", "all"],
            default="all",
            help="La collection à réindexer (par défaut : toutes).",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=64,
            help="Lignes vectorisées à la fois (par défaut : 64).",
        )
        parser.add_argument(
            "--recreate",
            action="store_true",
            help="Supprimer d'abord les collections (après un changement d'embedder).",
        )

    def handle(self, *args, collection, batch_size, recreate, **options):
        from memory.services.serve_link import maintenance_dispatch

        if batch_size < 1:
            raise CommandError("--batch-size doit être au moins 1.")
        bars = ProgressBars()
        try:
            outcome = maintenance_dispatch(
                "reindex",
                {"collection": collection, "batch_size": batch_size, "recreate": recreate},
                bars,
            )
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bars.close()
        for line in outcome.lines:
            self.stdout.write(line)
