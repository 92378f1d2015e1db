"""The fail step of the indexing state machine (memory.services.indexing): what a
failed claim leaves on its rows.

Every failure counts an attempt and backs off (exponential, jitter, capped). A
store that is down only delays (the row stays pending); an invalid embedding
or a collection of another embedder ends ``failed`` at once, an unexpected
error after MAX_ATTEMPTS; the error is kept for memory_stats, memory_doctor and
the admin. Only rows whose lease the task still holds are touched.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from memory.exceptions import DimensionMismatch, EmbeddingInvalid
from memory.models import IndexState
from memory.services.index_documents import KIND_MESSAGE, model_for
from memory.services.index_queue import exchange_replies

# Non-transient failures end in "failed" after this many attempts.
MAX_ATTEMPTS = 5
BACKOFF_BASE_S = 30
BACKOFF_CAP_S = 6 * 3600
ERROR_MAX_CHARS = 500
DIMENSION_HINT = " Lancez `python manage.py reindex --recreate` après un changement d'embedder."


@dataclass
class IndexReport:
    indexed: int = 0
    removed: int = 0
    skipped: int = 0
    gone: int = 0
    failed: int = 0
    # Rows left alone: leased by another task, or already indexed at their version.
    busy: int = 0
    current: int = 0
    # Rows whose write turned out stale (changed meanwhile): bumped and re-sent.
    stale: int = 0


def backoff_delay(attempts: int) -> timedelta:
    """Exponential backoff with jitter, capped."""
    base = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1))
    return timedelta(seconds=base * random.uniform(0.8, 1.2))


def index_failure_record(
    kind: str,
    row_ids: Sequence[int],
    token: str,
    exc: BaseException,
    *,
    transient: bool,
    versions: dict[int, int] | None = None,
) -> None:
    """Count an attempt, back off; a non-transient error ends failed after MAX_ATTEMPTS.

    ``versions``: the version of each row the task read. A row changed since is not the
    one that failed: left pending, its lease released, for its own task or the sweep (QA:
    the owner's newer text was marked failed for the older one's error, and never tried)."""
    model = model_for(kind)
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, DimensionMismatch):
        message += DIMENSION_HINT
    now = timezone.now()
    for row in model.all_objects.filter(pk__in=list(row_ids), index_lease_token=token).only(
        "id", "index_attempts", "version"
    ):
        if versions is not None and versions.get(row.id, row.version) != row.version:
            model.all_objects.filter(pk=row.id, index_lease_token=token).update(
                index_state=IndexState.PENDING,
                index_retry_at=None,
                index_queued_at=None,
                index_lease_token="",
                index_lease_until=None,
            )
            continue
        attempts = row.index_attempts + 1
        # Retrying cannot fix an invalid embedding or a dimension mismatch: failed at once.
        final = isinstance(exc, EmbeddingInvalid | DimensionMismatch)
        failed = not transient and (attempts >= MAX_ATTEMPTS or final)
        fields = {
            "index_state": IndexState.FAILED if failed else IndexState.PENDING,
            "index_attempts": attempts,
            "index_error": message[:ERROR_MAX_CHARS],
            "index_retry_at": None if failed else now + backoff_delay(attempts),
            "index_queued_at": None,
            "index_lease_token": "",
            "index_lease_until": None,
        }
        model.all_objects.filter(pk=row.id, index_lease_token=token).update(**fields)
        if kind == KIND_MESSAGE:
            exchange_replies([row.id]).update(
                index_state=fields["index_state"], index_error=message
            )
