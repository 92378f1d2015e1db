"""Counts per tier, collection and indexing state (the same selector as GET /api/memory/stats)."""

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from memory.management.french import FrenchCommand
from memory.models import IndexState, JobState
from memory.services.formatting import count_fr

# What the owner reads: French labels for the selector's keys (--json keeps the keys).
TIERS = {"facts": "faits", "messages": "messages", "summaries": "résumés"}
COUNTS = {
    "total": "{n} au total",
    "active": "{n} actif(s)",
    "forgotten": "{n} oublié(s)",
    "expired": "{n} expiré(s)",
    "compacted": "{n} compacté(s)",
}
VECTOR_STATUS = {"ok": "disponible", "unavailable": "injoignable", "skipped": "non consulté"}
STATE_LABELS = {**dict(IndexState.choices), **dict(JobState.choices)}


def _states(counts: dict[str, int]) -> str:
    return ", ".join(f"{STATE_LABELS.get(k, k).lower()} {v}" for k, v in counts.items())


def _vector_counts() -> dict:
    """Points per collection, counted by the running serve when it owns the Qdrant folder."""
    from memory.exceptions import MemoryServiceError
    from memory.services.serve_link import maintenance_dispatch

    try:
        return maintenance_dispatch("vector-counts", {}).data
    except MemoryServiceError as exc:  # serve unreachable: stats still show the rest
        return {
            "status": "unavailable",
            "error": str(exc),
            "collections": {"conversations": None, "knowledge": None, "live": None},
        }


class Command(FrenchCommand):
    help = (
        "Affiche les comptes par niveau, collection et état d'indexation, et la dernière "
        "indexation."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--json", action="store_true", help="Sortie JSON (clés en anglais, pour les scripts)."
        )
        parser.add_argument("--no-vectors", action="store_true", help="Ne pas ouvrir Qdrant.")

    def handle(self, *args, **options):
        from memory.selectors import memory_stats_get

        stats = memory_stats_get(include_vectors=False)
        if not options["no_vectors"]:
            stats["vectors"] = _vector_counts()
        if options["json"]:
            self.stdout.write(
                json.dumps(stats, cls=DjangoJSONEncoder, indent=2, ensure_ascii=False)
            )
            return
        for tier, label in TIERS.items():
            row = stats[tier]
            counts = ", ".join(
                COUNTS[k].format(n=v) for k, v in row.items() if k != "index" and k in COUNTS
            )
            self.stdout.write(f"{label} : {counts} | indexation : {_states(row['index'])}")
        agent = stats["agent_items"]
        self.stdout.write(
            f"moi & objectifs de l'agent : {agent['self_items']} sur lui-même, "
            f"{agent['goals']} objectif(s) | indexation : {_states(agent['index'])}"
        )
        vectors = stats["vectors"]
        collections = ", ".join(
            f"{k} {v if v is not None else '?'}" for k, v in vectors["collections"].items()
        )
        status = VECTOR_STATUS.get(vectors["status"], vectors["status"])
        status += f" ({vectors['error']})" if vectors.get("error") else ""
        self.stdout.write(f"qdrant : {status} | {collections}")
        self.stdout.write(
            f"auto-retrieval : {stats['retrievals']['total']} injection(s) journalisée(s)"
        )
        last = stats["last_indexed_at"]
        last = timezone.localtime(last).strftime("%d/%m/%Y %H:%M") if last else "jamais"
        self.stdout.write(f"dernière indexation : {last}")
        self.stdout.write(f"tâches de fond : {_states(stats['jobs']['states'])}")
        for job in stats["jobs"]["failed"][:5]:
            self.stdout.write(f"  tâche en échec {job['key']} : {job['error']}")
        for failure in stats["index_failures"][:5]:
            self.stdout.write(
                f"  échec d'indexation {failure['kind']} {failure['id']} "
                f"({count_fr(failure['attempts'], 'tentative')}) : {failure['error']}"
            )
