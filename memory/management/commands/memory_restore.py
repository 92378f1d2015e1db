"""Restore a memory_backup folder into the configured data dir (service stopped)."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand
from memory.services.formatting import count_fr


class Command(FrenchCommand):
    help = (
        "Restaure un dossier de memory_backup dans la base SQLite configurée (arrêtez serve "
        "d'abord). Refuse un dossier de données qui contient une mémoire, sauf avec --force. "
        "Les éléments restaurés attendent l'indexation (le balayage de serve reconstruit les "
        "vecteurs ; `reindex` le fait tout de suite) ; lancez ensuite `memory_doctor`."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, help="Le dossier écrit par memory_backup.")
        parser.add_argument(
            "--force",
            action="store_true",
            help="Écraser un dossier de données qui contient une mémoire.",
        )

    def handle(self, *args, directory: Path, force: bool, **options):
        from memory.services.backup import memory_restore, notes_settings
        from memory.services.restore_finish import memory_restore_finish

        try:
            manifest = memory_restore(directory=directory, force=force)
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        # A backup of an older version gets this version's schema.
        call_command("migrate", verbosity=0, interactive=False)
        done = memory_restore_finish(manifest=manifest)
        counts = manifest["restored_counts"]
        self.stdout.write(
            f"Sauvegarde du {manifest.get('created_at', '?')} restaurée : "
            f"{count_fr(counts.get('core_memory', 0), 'fait')}, "
            f"{count_fr(counts.get('messages', 0), 'message')}, "
            f"{count_fr(counts.get('memory_summary', 0), 'résumé')}."
        )
        forgotten, again = done["forgotten"], done["erased"]
        if forgotten["forgets"]:
            self.stdout.write(
                "Oublié à nouveau (oublié ici après la sauvegarde) : "
                f"{count_fr(forgotten['forgets'], 'oubli')}, "
                f"{count_fr(forgotten['facts'], 'fait')}, "
                f"{count_fr(forgotten['messages'], 'message')}, "
                f"{count_fr(forgotten['summaries'], 'résumé')}."
            )
        if any(again.values()):
            self.stdout.write(
                "Effacé à nouveau (effacé ici après la sauvegarde) : "
                f"{count_fr(again['facts'], 'fait')}, {count_fr(again['messages'], 'message')}, "
                f"{count_fr(again['summaries'], 'résumé')}."
            )
        saved = manifest.get("notes") or {}
        here = notes_settings()
        for name in ("obsidian_vault_path", "obsidian_api_url"):
            if saved.get(name, "") != here[name]:
                self.stdout.write(
                    f"Attention : {name} était « {saved.get(name, '')} », il est « {here[name]} » ici."
                )
        dropped = f" ; collections Qdrant de {done['dropped']} vidées" if done["dropped"] else ""
        self.stdout.write(
            f"{count_fr(done['requeued'], 'ligne remise', 'lignes remises')} en attente "
            f"d'indexation (une sauvegarde ne contient pas les vecteurs){dropped} : "
            "`serve` les reconstruit à son démarrage ; "
            "tout de suite : "
            "`python manage.py reindex` (`reindex --recreate` avec un serveur Qdrant), "
            "puis vérifiez : `python manage.py memory_doctor`."
        )
