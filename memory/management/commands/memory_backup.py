"""Back up the SQLite memory while the service runs (SQLite's online backup API)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand


class Command(FrenchCommand):
    help = (
        "Copy the live SQLite database into DIR with SQLite's online backup API (a consistent "
        "snapshot, safe while serve runs), plus backup.json with the notes settings."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, help="A new or empty folder.")

    def handle(self, *args, directory: Path, **options):
        from memory.services.backup import memory_backup

        try:
            report = memory_backup(directory=directory)
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        counts = report.counts
        self.stdout.write(
            f"Sauvegarde écrite dans {report.directory} : {report.bytes / 1e6:.1f} Mo, "
            f"{counts.get('core_memory', 0)} faits, {counts.get('messages', 0)} messages, "
            f"{counts.get('memory_summary', 0)} résumés, en {report.seconds:.1f} s."
        )
