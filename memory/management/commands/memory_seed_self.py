"""Load the agent's starting self and goals from a JSON or JSONL file (idempotent)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand


class Command(FrenchCommand):
    help = (
        "Load starting items about the agent itself and its goals: a JSON list or JSONL of "
        '{"kind": "self"|"goal", "category": ..., "content": ...}. All or nothing; '
        "items already there are left as they are. Example: memory/seeds/agent_self.example.jsonl"
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="The JSON or JSONL file to read.")

    def handle(self, *args, file: Path, **options):
        from memory.services.self_seed import self_seed

        if not file.is_file():
            raise CommandError(f"Fichier introuvable : {file}")
        try:
            report = self_seed(path=file)
        except MemoryServiceError as exc:
            raise CommandError(f"Rien n'a été chargé. {exc}") from exc
        for item in report.merged:
            self.stdout.write(f"{item.where} : fusionné avec un élément existant")
        self.stdout.write(
            f"Graine chargée : {len(report.added)} ajoutés, {len(report.present)} déjà présents, "
            f"{len(report.merged)} fusionnés. Ils seront indexés par le service "
            "(ou `manage.py reindex`)."
        )
