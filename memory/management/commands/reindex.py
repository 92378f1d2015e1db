"""Rebuild the Qdrant collections from SQLite (T1 is the source of truth)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from memory.exceptions import MemoryServiceError


class Command(BaseCommand):
    help = "Rebuild Qdrant from SQLite; safe to interrupt and run again."

    def add_arguments(self, parser):
        parser.add_argument(
            "--collection", choices=["conversations", "knowledge", "all"], default="all"
        )
        parser.add_argument("--batch-size", type=int, default=64)
        parser.add_argument(
            "--recreate",
            action="store_true",
            help="Drop the collections first (after an embedder change).",
        )

    def handle(self, *args, collection, batch_size, recreate, **options):
        from memory.services.maintenance import reindex

        if batch_size < 1:
            raise CommandError("--batch-size doit être au moins 1.")
        try:
            reports = reindex(
                collection=collection,
                batch_size=batch_size,
                recreate=recreate,
                progress=self._progress,
            )
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        indexed = sum(r.indexed for r in reports.values())
        removed = sum(r.removed for r in reports.values())
        failed = sum(r.failed for r in reports.values())
        self.stdout.write(
            f"Réindexation terminée : {indexed} points écrits, {removed} retirés, {failed} en échec."
        )

    def _progress(self, kind: str, done: int, total: int) -> None:
        width = 30
        filled = width * done // total if total else width
        bar = "#" * filled + "-" * (width - filled)
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{kind:<8} [{bar}] {done}/{total}{end}")
        sys.stderr.flush()
