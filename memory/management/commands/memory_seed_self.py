"""Load the agent's starting self and goals from a JSON or JSONL file (idempotent)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand
from memory.management.paths import file_check, file_unreadable


class Command(FrenchCommand):
    help = (
        "Charge les éléments de départ de l'agent sur lui-même et ses objectifs : une liste "
        'JSON ou du JSONL de {"kind": "self"|"goal", "category": ..., "content": ...}. '
        "Tout ou rien ; les éléments déjà présents restent tels quels. "
        "Exemple : memory/seeds/agent_self.example.jsonl. "
        "Pendant que serve tourne, c'est serve qui le fait."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="Le fichier JSON ou JSONL à lire.")

    def handle(self, *args, file: Path, **options):
        from memory.services.self_seed import seed_file_read, seed_items_parse
        from memory.services.serve_link import ServeLinkError, maintenance_dispatch

        file_check(file)
        try:
            text = seed_file_read(file)
        except OSError as exc:
            raise file_unreadable(file, exc) from None
        except MemoryServiceError as exc:
            raise CommandError(f"Rien n'a été chargé. {exc}") from exc
        try:
            seed_items_parse(text)  # a bad line is said here, before serve is asked
            # The similarity check needs the vector store: beside serve, serve runs the seed.
            outcome = maintenance_dispatch("seed-self", {"text": text})
        except ServeLinkError as exc:  # serve's own words (unreachable, refused, interrupted)
            raise CommandError(str(exc)) from exc
        except MemoryServiceError as exc:
            raise CommandError(f"Rien n'a été chargé. {exc}") from exc
        for line in outcome.lines:
            self.stdout.write(line)
