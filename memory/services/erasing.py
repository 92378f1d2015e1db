"""The owner's hard delete ("erase this for good"), distinct from forget.

A forget is undoable for a retention window; an erasure is final at once. Both
take the same path out of the memory (memory.services.forgetting): the rows are
attached to a ``Forgetting`` (``forgetting_take``: out of every read path, the
retrieval logs redacted), then purged in the same transaction
(``forgetting_purge``: rows and revisions deleted, FTS entries by the
triggers, Qdrant points by a job run at commit). What stays is the ``Forgetting`` row as a
record that something was erased: its counts, never its content
("[sujet effacé]").

- ``fact_erase``: one fact with its whole history.
- ``forgetting_erase``: what a forget took (exchanges, facts, summaries),
  without waiting for the end of its retention window.

The points of the deleted rows go through a durable job (``points_remove``)
written in the same transaction and run at its commit: if Qdrant is unreachable
then, or the process stops right after the commit, the job sweep removes them
once it answers; meanwhile no read path returns them, since every hit is
hydrated from T1. The same job then rewrites the embedded Qdrant's collections that
held them (EdgeVectorStore.rewrite): a deleted point's text stays in the engine's
files until its collection is written anew.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction

from memory.exceptions import MemoryServiceError
from memory.models import Fact, ForgetSelection, Forgetting, ForgettingState
from memory.services import fact_revisions
from memory.services.forgetting import (
    forgetting_lock,
    forgetting_purge,
    forgetting_take,
)
from memory.services.forgetting_select import Selection

logger = logging.getLogger(__name__)

ALREADY_ERASED_MESSAGE = "Cet oubli est déjà effacé définitivement."
RESTORED_MESSAGE = "Cet oubli a été annulé : ce qu'il avait pris est revenu dans la mémoire."


@transaction.atomic
def fact_erase(*, fact: Fact, actor: str) -> Forgetting:
    """Erase ``fact`` (forgotten or not) and its revisions from every tier and the logs."""
    current = fact_revisions.fact_locked(fact)
    chosen = Selection(selection=ForgetSelection.ERASE, facts=[current])
    forgetting = forgetting_take(
        topic=current.key, chosen=chosen, actor=actor, retention=timedelta(0), points=False
    )
    forgetting_purge(forgetting)
    logger.info("erased fact id=%s (erasure n°%s)", current.pk, forgetting.pk)
    return forgetting


@transaction.atomic
def forgetting_erase(*, forgetting_id: int, actor: str) -> Forgetting:
    """Purge a forget now instead of at the end of its retention window."""
    forgetting = forgetting_lock(forgetting_id)
    if forgetting.state == ForgettingState.PURGED:
        raise MemoryServiceError(ALREADY_ERASED_MESSAGE)
    if forgetting.state != ForgettingState.ACTIVE:
        raise MemoryServiceError(RESTORED_MESSAGE)
    forgetting_purge(forgetting)
    logger.info("erased forget n°%s at once (by %s)", forgetting.pk, actor)
    return forgetting
