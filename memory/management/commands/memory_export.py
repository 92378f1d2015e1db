"""Write the memory to a JSONL file (format version 1, described in README)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from types import SimpleNamespace

from django.core.management.base import CommandError

from memory.error_reasons import os_error_reason
from memory.management.french import FrenchCommand
from memory.management.paths import folder_check, not_a_folder_check
from memory.services.formatting import count_fr
from memory.services.portability import parse_since

TYPE_LABELS = {
    "message": "message",
    "summary": "résumé",
    "fact": "fait",
}


class Command(FrenchCommand):
    help = (
        "Exporte les faits (avec leurs révisions), les messages, les résumés et les réglages "
        "en JSONL."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "file", type=Path, help="Le fichier JSONL à écrire (« - » : la sortie standard)."
        )
        parser.add_argument(
            "--since",
            help="Seulement ce qui a changé depuis cette date (AAAA-MM-JJ ou ISO 8601) ; "
            "les réglages toujours.",
        )

    def handle(self, *args, file: Path, since: str | None, **options):
        from memory.services.portability import export_write, memory_export

        try:
            since_at = parse_since(since) if since else None
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if str(file) == "-":  # as the Unix tools read it (QA: a file named « - » was written)
            # The lines alone on the standard output, for a pipe; the summary beside.
            lines = SimpleNamespace(write=partial(self.stdout.write, ending=""))
            counts = export_write(lines, since_at)
            parts = ", ".join(count_fr(counts.get(t, 0), n) for t, n in TYPE_LABELS.items())
            self.stderr.write(f"Export écrit sur la sortie standard : {parts}, réglages.")
            return
        folder_check(file.parent)
        not_a_folder_check(file)
        try:
            counts = memory_export(path=file, since=since_at)
        except OSError as exc:
            # The earlier export, if any, is untouched (memory_export writes aside first).
            reason = os_error_reason(exc)
            raise CommandError(f"Impossible d'écrire l'export dans {file} : {reason}") from None
        parts = ", ".join(count_fr(counts.get(t, 0), label) for t, label in TYPE_LABELS.items())
        self.stdout.write(f"Export écrit dans {file} : {parts}, réglages.")
