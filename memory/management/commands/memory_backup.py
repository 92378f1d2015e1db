"""Back up the SQLite memory while the service runs (SQLite's online backup API)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand
from memory.services.formatting import count_fr

NO_DIRECTORY = "Donnez le dossier de la sauvegarde : un dossier nouveau ou vide."


class Command(FrenchCommand):
    help = (
        "Copie la base SQLite en cours d'utilisation dans le dossier donné avec l'API de "
        "sauvegarde en ligne de SQLite (un instantané cohérent, sans risque pendant que serve "
        "tourne), plus backup.json avec les réglages des notes."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", help="Un dossier nouveau ou vide.")

    def handle(self, *args, directory: str, **options):
        from memory.services.backup import memory_backup

        if not directory.strip():  # an unset shell variable: not the current folder (QA)
            raise CommandError(NO_DIRECTORY)
        try:
            report = memory_backup(directory=Path(directory))
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        counts = report.counts
        self.stdout.write(
            f"Sauvegarde écrite dans {report.directory} : {report.bytes / 1e6:.1f} Mo, "
            f"{count_fr(counts.get('core_memory', 0), 'fait')}, "
            f"{count_fr(counts.get('messages', 0), 'message')}, "
            f"{count_fr(counts.get('memory_summary', 0), 'résumé')}, en {report.seconds:.1f} s."
        )
