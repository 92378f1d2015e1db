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
    from django.db.models import Q, TextField
    from django.db.models.functions import Cast

    from memory.services.forgetting_select import contains_all
    from memory.services.formatting import clean_text

    previews = {clean_text(t, max_chars=200) for t in message_texts}
    rows = MemoryRetrieval.objects.all()
    if not terms and not previews:
        if not items:
            return
        # Only the rows naming one of the items (their JSON holds its quoted id): a single
        # fact's forget does not read every log row in Python.
        named = Q()
        for item in items:
            named |= Q(memories_text__contains=f'"{item}"')
        rows = rows.annotate(memories_text=Cast("memories", TextField())).filter(named)
    for row in rows.iterator():
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


def memories_present(ids: Iterable[str]) -> set[str]:
    """Which of these memory ids ("fact:12", "message:34", "summary:5") are still in
    memory: neither forgotten (alone or with a topic) nor erased. Ids of another shape
    are returned as they are."""
    from memory.models import Fact, Message, Summary

    wanted: dict[str, set[int]] = {"fact": set(), "message": set(), "summary": set()}
    present: set[str] = set()
    for item in ids:
        kind, _, raw = item.partition(":")
        if kind in wanted and raw.isdigit():
            wanted[kind].add(int(raw))
        else:
            present.add(item)
    reads = {
        "fact": Fact.all_objects.filter(forgotten=False, forgetting__isnull=True),
        "message": Message.objects.all(),
        "summary": Summary.objects.all(),
    }
    for kind, pks in wanted.items():
        if pks:
            found = reads[kind].filter(pk__in=pks).values_list("pk", flat=True)
            present.update(f"{kind}:{pk}" for pk in found)
    return present
