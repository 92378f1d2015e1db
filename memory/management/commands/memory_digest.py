"""Force the digest of the observed rooms now (the same durable job the schedule runs)."""

from django.core.management.base import CommandError

from memory.management.french import FrenchCommand


class Command(FrenchCommand):
    help = (
        "Lance le digest des salons observés maintenant : les faits durables des messages "
        "non digérés sont enregistrés, puis retirés de la mémoire live."
    )

    def handle(self, *args, **options) -> None:
        from agent.digest import digest_run_now

        outcome, digest = digest_run_now()
        if outcome == "waiting":
            raise CommandError(digest["note"])
        if outcome == "skipped":
            self.stdout.write("Un digest est déjà en cours ou programmé : il fera ce travail.")
            return
        if outcome in ("retry", "failed"):
            raise CommandError(
                f"Le digest a échoué ({digest['note']}) : ce qui n'a pas été digéré reste "
                "dans la mémoire live, il sera réessayé."
            )
        self.stdout.write(
            f"Digest terminé : {digest['messages']} messages digérés, "
            f"{digest['facts']} faits enregistrés, coût {digest['cost_usd']} $."
        )
