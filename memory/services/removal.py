"""What takes content out of the derived stores and the logs, for a forget, its purge
and a hard delete (memory.services.forgetting, memory.services.erasing): the Qdrant
points of rows (at once, else a durable job retries; for rows deleted for good, a durable
job written with the deletion), and what the retrieval log's writer checks its rows by
(previews_forgotten_since, memories_present). The copies' redaction is
memory.services.copies_redaction.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction

from memory.models import Fact, Message, Summary
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, rows_changed
from memory.services.preview_rule import PreviewRule  # re-exported
from memory.stores.compiled import CompiledRead, ids_in

logger = logging.getLogger(__name__)

POINTS_REMOVE_JOB = "points_remove"
# In a points_remove job's payload: its rows were deleted for good, so the collections
# their points were in are rewritten after the deletion (the engine keeps a deleted
# point's text in its files until then). Set by remove_deleted_points only.
REWRITE_FLAG = "rewrite"
HISTORY_FLAG = "history"
# Saved by the job once SQLite is scrubbed, once the collections are rewritten (a retry
# does not do them again).
SCRUBBED_FLAG = "scrubbed"
REWRITTEN_FLAG = "rewritten"
SCRUB_RETRY = timedelta(seconds=30)


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


def remove_deleted_points(
    root_ids: list[int], fact_ids: list[int], summary_ids: list[int], *, history: bool = False
) -> None:
    """The points of rows the caller's transaction deletes for good (a purge, an erasure).

    Nothing else will ever remove them once the rows are gone (the indexing machine
    acts on rows), so the removal is a ``points_remove`` job written in that same
    transaction (ids only, never the erased words), not a call on commit that a
    process stopped right after the commit would lose. It runs at once after the
    commit and leaves no row when it succeeds; when Qdrant does not answer, or the
    process stopped first, the job waits and the sweep runs it until it succeeds.

    A deleted point's text stays in the embedded Qdrant's files (its WAL, its segment
    pages) until its collection is written anew: the job rewrites the collections
    (REWRITE_FLAG; EdgeVectorStore.rewrite), so an erasure leaves none of it on disk.
    """
    from memory.services.jobs import job_enqueue

    job = job_enqueue(
        kind=POINTS_REMOVE_JOB,
        key=f"{POINTS_REMOVE_JOB}:{uuid.uuid4().hex}",
        payload={
            "messages": root_ids,
            "facts": fact_ids,
            "summaries": summary_ids,
            REWRITE_FLAG: True,
            # Old values of facts that stay (history lines erased): a fact's point held
            # its value as it was, so knowledge is rewritten too (review).
            HISTORY_FLAG: history,
        },
        send=False,
    )
    transaction.on_commit(lambda: _points_remove_now(job.pk))


def _points_remove_now(job_id: int) -> None:
    from memory.models import Job, JobState
    from memory.services.jobs import job_run

    try:
        done = job_run(job_id) == "done"
    except Exception as exc:  # after the commit: never the caller's error; the sweep retries
        logger.warning("points removal job %s left to the sweep (%s)", job_id, exc)
        return
    if done:
        Job.objects.filter(pk=job_id, state=JobState.DONE).delete()


def job_points_remove(payload: dict, *, checkpoint=None) -> dict:
    """The durable job of ``remove_points``: idempotent; fails (and is retried with
    backoff) while Qdrant is unavailable.

    A forget undone before the job ran brought its rows back, and indexed them again:
    their points, deleted here too, are written again by the indexing machine (a
    version bump), so an undone forget never leaves a row marked indexed without one.

    Rows deleted for good (REWRITE_FLAG) have SQLite's files scrubbed first, which needs
    nothing of Qdrant (a review: behind it, a Qdrant down kept the erased words in the
    log for as long), then their collections rewritten once their points are deleted,
    before the job is done: a run cut short runs again, what it had not done with it
    (each step, once done, saved in the payload). A scrub the log could not take yet
    (a reader, the writer) is tried again once Qdrant's part is done."""
    knowledge = bool(payload["facts"] or payload["summaries"] or payload.get(HISTORY_FLAG))
    scrub_busy = None
    if payload.get(REWRITE_FLAG) and not payload.get(SCRUBBED_FLAG):
        scrub_busy = _sqlite_scrub(payload, facts=knowledge)
        if scrub_busy is None and checkpoint is not None:
            checkpoint(**{SCRUBBED_FLAG: True})
    _points_delete(payload["messages"], payload["facts"], payload["summaries"])
    if payload.get(REWRITE_FLAG) and not payload.get(REWRITTEN_FLAG):
        _collections_rewrite(messages=bool(payload["messages"]), knowledge=knowledge)
        if checkpoint is not None:  # a scrub left for later does not rewrite them again
            checkpoint(**{REWRITTEN_FLAG: True})
    with transaction.atomic():
        for kind, rows, ids in (
            (KIND_MESSAGE, Message.objects, payload["messages"]),
            (
                KIND_FACT,
                Fact.all_objects.filter(forgotten=False, forgetting__isnull=True),
                payload["facts"],
            ),
            (KIND_SUMMARY, Summary.objects, payload["summaries"]),
        ):
            back = list(rows.filter(pk__in=ids).values_list("id", flat=True))
            if back:
                rows_changed(kind, back)
    if scrub_busy is not None:
        from django.utils import timezone

        from memory.services.jobs import JobWait

        raise JobWait(str(scrub_busy), until=timezone.now() + SCRUB_RETRY)
    return {}


def _sqlite_scrub(payload: dict, *, facts: bool) -> Exception | None:
    """SQLite's files keep no byte of the deleted rows (memory.stores.sqlite_scrub): the
    keyword indexes that held them merged, the log checkpointed. What kept the log from
    being checkpointed (a reader, the writer), None once scrubbed."""
    from memory.stores.sqlite_scrub import ScrubBusy, sqlite_scrub

    indexes = [
        index
        for index, held in (
            ("messages_fts", payload["messages"]),
            ("facts_fts", facts),
            ("summaries_fts", payload["summaries"]),
        )
        if held
    ]
    try:
        sqlite_scrub(indexes)
    except ScrubBusy as exc:
        return exc
    return None


def _points_delete(root_ids: list[int], fact_ids: list[int], summary_ids: list[int]) -> None:
    from memory.services.summary_parts import summary_part_ids
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE, get_vector_store, point_id

    store = get_vector_store()
    message_points = [point_id(KIND_MESSAGE, i) for i in root_ids]
    # A message's point is an exchange, or a live point when its room is observed.
    store.delete(CONVERSATIONS, message_points)
    store.delete(LIVE, message_points)
    store.delete(
        KNOWLEDGE,
        [point_id(KIND_FACT, i) for i in fact_ids]
        + [point_id(KIND_SUMMARY, i) for i in summary_ids]
        + [part for i in summary_ids for part in summary_part_ids(i)],  # its passages
    )


def _collections_rewrite(*, messages: bool, knowledge: bool) -> None:
    """Rewrite the collections the deleted rows' points were in, even when a forget had
    deleted the points before: what they left on disk goes now."""
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE, get_vector_store

    names = [CONVERSATIONS, LIVE] if messages else []
    if knowledge:
        names.append(KNOWLEDGE)
    store = get_vector_store()
    for name in names:
        store.rewrite(name)


def previews_forgotten_since(moment: datetime) -> PreviewRule:
    """The preview rule of every forget and exclusion made since ``moment``: what their
    passes redacted in the logs, for a row that was not in the table yet. Each read takes
    an index and is compiled once (the log writer runs them for every batch, holding the
    write lock)."""
    from memory.models import ForgetSelection
    from memory.services.forgetting_select import topic_terms

    forgets = _FORGETS_SINCE.rows(now=moment)
    texts = [text for (text,) in _EXCLUDED_SINCE.rows(now=moment)]
    if forgets:
        texts += [text for (text,) in _TAKEN_TEXTS.rows(ids=[pk for pk, _, _ in forgets])]
    return PreviewRule.of(
        terms=[topic_terms(t) for _, t, how in forgets if how != ForgetSelection.ERASE],
        texts=texts,
    )


def _forgets_since(since: datetime):
    from memory.models import Forgetting, ForgettingState

    return Forgetting.objects.filter(
        created_at__gte=since, state=ForgettingState.ACTIVE
    ).values_list("id", "topic", "selection")


def _user_messages():
    from memory.models import MessageRole

    return Message.all_objects.filter(role=MessageRole.USER)


_FORGETS_SINCE = CompiledRead(_forgets_since)
_EXCLUDED_SINCE = CompiledRead(
    lambda since: (
        _user_messages().filter(created_at__gte=since, memory_excluded=True).values_list("content")
    )
)
_TAKEN_TEXTS = CompiledRead(
    lambda _now: _user_messages().filter(forgetting_id__in=ids_in()).values_list("content")
)


def memories_present(ids: Iterable[str]) -> set[str]:
    """Which of these memory ids ("fact:12", "message:34", "summary:5") are still in
    memory: neither forgotten (alone or with a topic) nor erased. Ids of another shape
    are returned as they are. One compiled read per kind asked (the log writer runs it
    for every batch of rows)."""
    wanted: dict[str, set[int]] = {"fact": set(), "message": set(), "summary": set()}
    present: set[str] = set()
    for item in ids:
        kind, _, raw = item.partition(":")
        if kind in wanted and raw.isdigit():
            wanted[kind].add(int(raw))
        else:
            present.add(item)
    for kind, pks in wanted.items():
        if pks:
            present.update(f"{kind}:{pk}" for (pk,) in _PRESENT[kind].rows(ids=sorted(pks)))
    return present


_PRESENT = {
    "fact": CompiledRead(
        lambda _now: Fact.all_objects.filter(
            forgotten=False, forgetting__isnull=True, pk__in=ids_in()
        ).values_list("pk")
    ),
    "message": CompiledRead(lambda _now: Message.objects.filter(pk__in=ids_in()).values_list("pk")),
    "summary": CompiledRead(lambda _now: Summary.objects.filter(pk__in=ids_in()).values_list("pk")),
}
