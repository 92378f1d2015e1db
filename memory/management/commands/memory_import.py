"""Read a JSONL export into the memory: all or nothing, idempotent."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand
from memory.management.paths import file_check, file_unreadable
from memory.services.formatting import count_fr

LABELS = {"message": "message", "summary": "résumé", "fact": "fait", "revision": "révision"}


class Command(FrenchCommand):
    help = (
        "Importe un fichier de memory_export. Rien n'est importé si une ligne est invalide ; "
        "le relancer ne change rien. Les nouveaux éléments restent en attente d'indexation."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="Le fichier JSONL à lire.")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Vérifier tout le fichier et dire ce que ferait l'import, sans rien modifier.",
        )

    def handle(self, *args, file: Path, dry_run: bool, **options):
        from memory.services.portability_import import memory_import

        file_check(file)
        try:
            report = memory_import(path=file, dry_run=dry_run)
        except MemoryServiceError as exc:
            raise CommandError(f"Rien n'a été importé. {exc}") from exc
        except OSError as exc:  # the file only: the import reads nothing else from disk
            raise file_unreadable(file, exc) from None
        for conflict in report.conflicts:
            self.stdout.write(f"conflit : {conflict}")
        if report.settings_changed:
            self.stdout.write("réglages modifiés : " + ", ".join(report.settings_changed))
        created = ", ".join(count_fr(report.created.get(k, 0), v) for k, v in LABELS.items())
        others = (
            f"{count_fr(sum(report.unchanged.values()), 'déjà présent', 'déjà présents')}, "
            f"{count_fr(len(report.conflicts), 'conflit')}"
        )
        if dry_run:
            self.stdout.write(
                f"Simulation, rien n'a été modifié. Le fichier est valide ; l'import créerait "
                f"{created} ; {others}."
            )
            return
        self.stdout.write(
            f"Import terminé, créés : {created} ; {others} ; {count_fr(report.records, 'ligne')} "
            f"en {report.seconds:.2f} s ({report.rate:.0f} lignes/s). "
            "Les nouveaux éléments attendent l'indexation (service lancé, ou `manage.py reindex`)."
        )
