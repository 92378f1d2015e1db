"""A fact's accesses: counted when auto-retrieval injects it or a search returns it to the
agent. An access is not a change: no revision, no re-embedding.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from memory.models import Fact


def facts_accessed(fact_ids: Iterable[int]) -> int:
    """Count one access (injected by auto-retrieval, returned to the agent by a search).

    One UPDATE with F(): no read-modify-write race, no revision, no re-embedding
    (``updated_at`` and the version are untouched: an access is not a change).
    """
    from django.db.models import F

    ids = {int(i) for i in fact_ids}
    if not ids:
        return 0
    # Every kind: the agent's self and goal items found by its tools count too.
    return Fact.all_objects.filter(pk__in=ids, forgetting__isnull=True).update(
        access_count=F("access_count") + 1, last_accessed_at=timezone.now()
    )
