"""Purge facts past their TTL from both tiers."""

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Forget expired facts (revision 'expired') and remove their points."

    def handle(self, *args, **options):
        from memory.services.expiry import expired_purge

        purged = expired_purge()
        self.stdout.write(f"{purged} fait(s) expiré(s) purgé(s).")
