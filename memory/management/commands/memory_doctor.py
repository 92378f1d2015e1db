"""Compare SQLite and Qdrant and, with --fix, repair the differences.

The exit status is the verdict, for a script (cron, CI) that reads no French: 0 when
everything is consistent (after --fix: when the repair left nothing), 1 when differences
remain (found without --fix, or left by a repair that failed).
"""

from __future__ import annotations

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand

REPAIR_FAILED_ERROR = "memory_doctor --fix n'a pas tout réparé : des différences restent."
DIFFERENCES_FOUND_ERROR = (
    "memory_doctor a trouvé des différences (voir ci-dessus) : relancez avec --fix."
)


class Command(FrenchCommand):
    help = (
        "Cherche les lignes sans point, les points sans ligne active, les points d'une autre "
        "version, les lignes en échec et une mauvaise dimension. "
        "Pendant que serve tourne, c'est serve qui le fait. "
        "Code de sortie : 0 quand tout est cohérent (avec --fix : quand tout a été réparé), "
        "1 quand des différences restent."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--collection", choices=["conversations", "knowledge", "live", "all"], default="all"
        )
        parser.add_argument("--fix", action="store_true", help="Réparer ce qui est trouvé.")

    def handle(self, *args, collection, fix, **options):
        from memory.services.serve_link import maintenance_dispatch

        try:
            outcome = maintenance_dispatch("doctor", {"collection": collection, "fix": fix})
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        for line in outcome.lines:
            self.stdout.write(line)
        if fix and (outcome.data or {}).get("repair_failed"):
            raise CommandError(REPAIR_FAILED_ERROR, returncode=1)
        if not outcome.ok:
            raise CommandError(DIFFERENCES_FOUND_ERROR, returncode=1)
