"""TTL expiry: facts past their expires_at leave both tiers."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.models import Actor, Fact, RevisionReason
from memory.services.fact_revisions import revision_record
from memory.services.indexing import KIND_FACT, index_enqueue


def expired_purge(*, now: datetime | None = None) -> int:
    """Soft-delete expired facts (revision "expired") and remove their points.

    T1 keeps the row and its history (the dashboard can show and restore it);
    the point leaves Qdrant through the fact's indexing task, which removes the
    point of any forgotten or expired fact. Returns the number of facts purged.
    """
    now = now or timezone.now()
    purged = 0
    # Every kind: an item of the agent's self or goals given a TTL expires too.
    expired = Fact.all_objects.filter(forgetting__isnull=True, forgotten=False, expires_at__lte=now)
    for pk in list(expired.values_list("pk", flat=True)):
        with transaction.atomic():
            # The row as it is NOW (the transaction holds the write lock): the owner may
            # have kept it (expiry removed or moved) or forgotten it since the list was read.
            fact = expired.select_for_update().filter(pk=pk).first()
            if fact is None:
                continue
            fact_expire(fact=fact, now=now)
        purged += 1
    return purged


def fact_expire(*, fact: Fact, now: datetime) -> None:
    """Forget ``fact`` as its expiry does (revision "expired", by the system, dated
    ``now``). The caller holds the row: the purge above, and a forced restore giving back
    an expiry the backup did not have (memory.services.backup_forgets)."""
    fact.forgotten = True
    fact.forgotten_at = now
    fact.save(update_fields=["forgotten", "forgotten_at", "updated_at"])
    revision_record(
        fact=fact,
        actor=Actor.SYSTEM,
        reason=RevisionReason.EXPIRED,
        old_value=fact.value,
    )
    index_enqueue(KIND_FACT, fact.id)
