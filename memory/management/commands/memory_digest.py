"""Force the digest of the observed rooms now (the same durable job the schedule runs)."""

from django.core.management.base import CommandError

from memory.exceptions import MemoryServiceError
from memory.management.french import FrenchCommand
from memory.services.formatting import count_fr


class Command(FrenchCommand):
    help = (
        "Lance le digest des salons observés maintenant : les faits durables des messages "
        "non digérés sont enregistrés, puis retirés de la mémoire live. "
        "Pendant que serve tourne, c'est serve qui le fait."
    )

    def handle(self, *args, **options) -> None:
        from memory.services.serve_link import maintenance_dispatch

        try:
            # Its facts go through dedup, whose similarity check needs the vector store:
            # beside serve (the store's one owner), serve runs the digest.
            digest = maintenance_dispatch("digest", {}).data
        except MemoryServiceError as exc:
            raise CommandError(str(exc)) from exc
        outcome = digest["outcome"]
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
            "Digest terminé : "
            f"{count_fr(digest['messages'], 'message digéré', 'messages digérés')}, "
            f"{count_fr(digest['facts'], 'fait enregistré', 'faits enregistrés')}, "
            f"coût {digest['cost_usd']} $."
        )
