"""Purge facts past their TTL from both tiers."""

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand


class Command(FrenchCommand):
    help = (
        "Oublie les faits expirés (révision « expired ») et supprime leurs points. "
        "Pendant que serve tourne, c'est serve qui le fait."
    )

    def handle(self, *args, **options):
        from memory.services.serve_link import maintenance_dispatch

        try:
            outcome = maintenance_dispatch("purge-expired", {})
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        for line in outcome.lines:
            self.stdout.write(line)
