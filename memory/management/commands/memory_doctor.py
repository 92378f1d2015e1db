"""Compare SQLite and Qdrant and, with --fix, repair the differences."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from memory.exceptions import MemoryServiceError


class Command(BaseCommand):
    help = (
        "Find rows without a point, points without a live row, points of another version, "
        "failed rows and a wrong dimension."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--collection", choices=["conversations", "knowledge", "all"], default="all"
        )
        parser.add_argument("--fix", action="store_true", help="Repair what is found.")

    def handle(self, *args, collection, fix, **options):
        from memory.services.maintenance import memory_doctor

        try:
            reports = memory_doctor(collection=collection, fix=fix)
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        for report in reports:
            if not report.dimension_ok:
                line = (
                    f"{report.collection}: dimension {report.found_dimension} au lieu de "
                    f"{report.expected_dimension} — lancez `python manage.py reindex --recreate`"
                )
            else:
                line = (
                    f"{report.collection}: {len(report.missing)} sans point, "
                    f"{len(report.orphans)} points orphelins, {len(report.stale)} périmés"
                )
            failed = sum(len(rows) for rows in report.failed.values())
            if failed:
                line += f", {failed} en échec d'indexation"
            if report.fixed:
                line += " → réparé"
            self.stdout.write(line)
            for kind, rows in report.failed.items():
                for row_id, error in list(rows.items())[:5]:
                    self.stdout.write(f"  échec {kind} {row_id} : {error}")
        from memory.selectors import job_stats_get

        jobs = job_stats_get()
        for job in jobs["failed"][:5]:
            self.stdout.write(f"tâche de fond en échec {job['key']} : {job['error']}")
        healthy = all(r.healthy or r.fixed for r in reports) and not jobs["failed"]
        self.stdout.write(
            "Tout est cohérent." if healthy else "Des différences restent : relancez avec --fix."
        )
