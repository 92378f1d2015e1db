"""What takes content out of the derived stores and the logs, for a forget, its purge
and a hard delete (memory.services.forgetting, memory.services.erasing): the Qdrant
points of rows (at once, else a durable job retries) and the retrieval logs' redaction.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from memory.models import MemoryRetrieval
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY

logger = logging.getLogger(__name__)

REDACTED = "[oublié]"
POINTS_REMOVE_JOB = "points_remove"


def remove_points(root_ids: list[int], fact_ids: list[int], summary_ids: list[int]) -> None:
    """At once; when Qdrant does not answer, a durable job retries (``job_points_remove``).

    A forgotten row would have its point removed by the indexing machine anyway,
    but a purged or erased row is gone: nothing else would ever remove its point.
    """
    try:
        _points_delete(root_ids, fact_ids, summary_ids)
    except Exception as exc:
        from memory.services.jobs import job_enqueue

        logger.warning("forget: points left to a durable job (%s)", exc)
        job_enqueue(
            kind=POINTS_REMOVE_JOB,
            key=f"{POINTS_REMOVE_JOB}:{uuid.uuid4().hex}",
            payload={"messages": root_ids, "facts": fact_ids, "summaries": summary_ids},
        )


def job_points_remove(payload: dict, *, checkpoint=None) -> dict:
    """The durable job of ``remove_points``: idempotent; fails (and is retried with
    backoff) while Qdrant is unavailable."""
    _points_delete(payload["messages"], payload["facts"], payload["summaries"])
    return {}


def _points_delete(root_ids: list[int], fact_ids: list[int], summary_ids: list[int]) -> None:
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE, get_vector_store, point_id

    store = get_vector_store()
    message_points = [point_id(KIND_MESSAGE, i) for i in root_ids]
    # A message's point is an exchange, or a live point when its room is observed.
    store.delete(CONVERSATIONS, message_points)
    store.delete(LIVE, message_points)
    store.delete(
        KNOWLEDGE,
        [point_id(KIND_FACT, i) for i in fact_ids]
        + [point_id(KIND_SUMMARY, i) for i in summary_ids],
    )


def redact_logs(*, items: set[str], terms: list[str] = (), message_texts: Iterable[str] = ()):
    """Retrieval logs keep no forgotten text: their memories and message previews are redacted."""
    from memory.services.forgetting_select import contains_all
    from memory.services.formatting import clean_text

    previews = {clean_text(t, max_chars=200) for t in message_texts}
    for row in MemoryRetrieval.objects.all().iterator():
        changed = False
        for memory in row.memories:
            if memory.get("id") in items and memory.get("text") != REDACTED:
                memory["text"] = REDACTED
                changed = True
        preview_hit = row.message_preview in previews or (
            terms and contains_all(row.message_preview, terms)
        )
        if preview_hit and row.message_preview != REDACTED:
            row.message_preview = REDACTED
            changed = True
        if changed:
            row.save(update_fields=["memories", "message_preview"])
