"""T1 → T2: embedding rows and writing their points, at least once, never twice.

Every indexable row (exchange, fact, summary) carries an indexing state. A save
enqueues a task on commit; the task (or a batch from `reindex`) embeds the row,
writes its point under a deterministic id (uuid5 of kind and row id, so a
second run overwrites instead of duplicating) and marks the row indexed only
after Qdrant confirmed the write. Transient failures leave the row pending with
a backoff; malformed embeddings mark it failed. The periodic sweep re-enqueues
what is left behind, so a lost broker message or a store outage delays indexing
but loses nothing.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from memory.exceptions import MemoryServiceError, StoreUnavailable
from memory.models import Fact, IndexState, Message, MessageRole, Summary

logger = logging.getLogger(__name__)

KIND_MESSAGE = "message"
KIND_FACT = "fact"
KIND_SUMMARY = "summary"
KINDS = (KIND_MESSAGE, KIND_FACT, KIND_SUMMARY)

# Roles whose messages make an exchange point; the others are marked skipped.
INDEXED_ROLES = (MessageRole.USER, MessageRole.ASSISTANT)
# A pending row younger than this is left to the task its save enqueued.
SWEEP_GRACE = timedelta(minutes=1)
SWEEP_BATCH = 500
# Failed rows are retried by the sweep until this many attempts.
MAX_ATTEMPTS = 10
BACKOFF_BASE_S = 30
BACKOFF_CAP_S = 6 * 3600
ERROR_MAX_CHARS = 500


@dataclass(frozen=True)
class Document:
    """What a row becomes in Qdrant."""

    kind: str
    row_id: int
    collection: str
    point_id: str
    text: str
    payload: dict
    # Rows marked indexed when the point is confirmed (an exchange: both messages).
    row_ids: tuple[int, ...]
    # The row's version when it was read: the mark is skipped if it changed since.
    version: str


@dataclass
class IndexReport:
    indexed: int = 0
    removed: int = 0
    skipped: int = 0
    gone: int = 0
    failed: int = 0


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _model(kind: str) -> type[models.Model]:
    return {KIND_MESSAGE: Message, KIND_FACT: Fact, KIND_SUMMARY: Summary}[kind]


def backoff_delay(attempts: int) -> timedelta:
    """Exponential backoff with jitter, capped."""
    base = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** max(0, attempts - 1))
    return timedelta(seconds=base * random.uniform(0.8, 1.2))


# --- What a row looks like in Qdrant ------------------------------------------


def exchange_root_id(message: Message) -> int:
    """The id that keys an exchange: the user message a reply answers."""
    return message.reply_to_id or message.id


def exchange_document(root: Message, reply: Message | None) -> Document:
    from memory.stores.vectors import CONVERSATIONS, point_id

    assistant = reply.content if reply else ""
    text = root.content if not assistant else f"{root.content}\n{assistant}"
    row_ids = (root.id, reply.id) if reply else (root.id,)
    return Document(
        kind=KIND_MESSAGE,
        row_id=root.id,
        collection=CONVERSATIONS,
        point_id=point_id(KIND_MESSAGE, root.id),
        text=text,
        payload={
            "channel": root.channel,
            "role": "exchange",
            "user_message": root.content,
            "assistant_message": assistant,
            "author": root.author,
            "timestamp": _iso(root.created_at),
            "message_id": root.id,
            "reply_id": reply.id if reply else None,
            "row_id": root.id,
        },
        row_ids=row_ids,
        version=f"{root.content}\x00{assistant}",
    )


FACT_SENTENCE_WORDS = 3


def fact_text(fact: Fact) -> str:
    """The text embedded for a fact.

    A value that is a sentence stands alone (the key would only add noise, and
    two keys for one fact would keep dedup from seeing they are the same); a
    short value ("Mickael") needs its key read as words ("user name : Mickael").
    """
    if len(fact.value.split()) >= FACT_SENTENCE_WORDS:
        return fact.value
    return f"{fact.key.replace('_', ' ')} : {fact.value}"


def fact_document(fact: Fact) -> Document:
    from memory.stores.vectors import KNOWLEDGE, point_id

    return Document(
        kind=KIND_FACT,
        row_id=fact.id,
        collection=KNOWLEDGE,
        point_id=point_id(KIND_FACT, fact.id),
        text=fact_text(fact),
        payload={
            "type": "fact",
            "channel": fact.channel,
            "key": fact.key,
            "content": fact.value,
            "timestamp": _iso(fact.created_at),
            "updated_at": _iso(fact.updated_at),
            "subjects": list(fact.subjects),
            "memory_type": fact.memory_type,
            "importance": fact.importance,
            "expires_at": _iso(fact.expires_at),
            "row_id": fact.id,
        },
        row_ids=(fact.id,),
        version=_iso(fact.updated_at) or "",
    )


def summary_document(summary: Summary) -> Document:
    from memory.stores.vectors import KNOWLEDGE, point_id

    return Document(
        kind=KIND_SUMMARY,
        row_id=summary.id,
        collection=KNOWLEDGE,
        point_id=point_id(KIND_SUMMARY, summary.id),
        text=summary.content,
        payload={
            "type": "summary",
            "channel": summary.channel,
            "key": "",
            "content": summary.content,
            "timestamp": _iso(summary.period_end or summary.created_at),
            "subjects": [],
            "memory_type": "summary",
            "importance": None,
            "expires_at": None,
            "row_id": summary.id,
        },
        row_ids=(summary.id,),
        version=summary.content,
    )


def _current_version(kind: str, row_id: int) -> str | None:
    """The version of a row now, as its Document would carry it (None: gone)."""
    documents, _, _ = _documents(kind, [row_id])
    return documents[0].version if documents else None


def _documents(kind: str, row_ids: Sequence[int]) -> tuple[list[Document], list[tuple], list[int]]:
    """Documents to write, (collection, point id, row id) to remove, and row ids to skip."""
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, point_id

    documents: list[Document] = []
    removals: list[tuple] = []
    skips: list[int] = []
    if kind == KIND_MESSAGE:
        messages = Message.objects.filter(pk__in=row_ids)
        roots: dict[int, Message] = {}
        for message in messages:
            if message.role not in INDEXED_ROLES:
                skips.append(message.id)
                continue
            root_id = exchange_root_id(message)
            roots.setdefault(root_id, message if message.id == root_id else None)
        missing = [rid for rid, msg in roots.items() if msg is None]
        for root in Message.objects.filter(pk__in=missing):
            roots[root.id] = root
        replies: dict[int, Message] = {}
        reply_rows = Message.objects.filter(
            reply_to_id__in=list(roots), role=MessageRole.ASSISTANT
        ).order_by("created_at", "id")
        for reply in reply_rows:
            replies.setdefault(reply.reply_to_id, reply)
        for root_id, root in roots.items():
            if root is None:
                removals.append((CONVERSATIONS, point_id(KIND_MESSAGE, root_id), root_id))
                continue
            documents.append(exchange_document(root, replies.get(root_id)))
    elif kind == KIND_FACT:
        now = timezone.now()
        for fact in Fact.objects.filter(pk__in=row_ids):
            if fact.forgotten or (fact.expires_at is not None and fact.expires_at <= now):
                removals.append((KNOWLEDGE, point_id(KIND_FACT, fact.id), fact.id))
            else:
                documents.append(fact_document(fact))
    elif kind == KIND_SUMMARY:
        documents = [summary_document(s) for s in Summary.objects.filter(pk__in=row_ids)]
    else:
        raise MemoryServiceError(f"Type d'élément inconnu : {kind!r}.")
    return documents, removals, skips


# --- Writing points -------------------------------------------------------------


def _mark_indexed(kind: str, documents: Iterable[Document]) -> int:
    model = _model(kind)
    now = timezone.now()
    marked = 0
    for document in documents:
        # Skip the mark when the row changed while we embedded it: its own
        # task (enqueued by that change) will index the new version.
        if _current_version(kind, document.row_id) != document.version:
            continue
        marked += model.objects.filter(pk__in=document.row_ids).update(
            index_state=IndexState.INDEXED,
            index_error="",
            indexed_at=now,
            index_retry_at=None,
        )
    return marked


def _mark(kind: str, row_ids: Sequence[int], *, state: str, error: str) -> None:
    model = _model(kind)
    for row in model.objects.filter(pk__in=row_ids).only("id", "index_attempts"):
        attempts = row.index_attempts + 1
        model.objects.filter(pk=row.id).update(
            index_state=state,
            index_attempts=attempts,
            index_error=error[:ERROR_MAX_CHARS],
            index_retry_at=timezone.now() + backoff_delay(attempts),
        )


def index_rows(kind: str, row_ids: Sequence[int]) -> IndexReport:
    """Embed and write the points of these rows (one kind), in one embedding batch.

    Raises StoreUnavailable (transient: rows stay pending with a backoff).
    A malformed embedding marks the rows failed and is not raised.
    """
    from memory.exceptions import EmbeddingInvalid
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import get_vector_store

    report = IndexReport()
    documents, removals, skips = _documents(kind, row_ids)
    found = {d.row_id for d in documents} | {r[2] for r in removals} | set(skips)
    report.gone = len(set(row_ids) - found - _reply_ids(kind, row_ids))
    if skips:
        _model(kind).objects.filter(pk__in=skips).update(index_state=IndexState.SKIPPED)
        report.skipped = len(skips)
    if not documents and not removals:
        return report
    store = get_vector_store()
    try:
        for collection, pid, _ in removals:
            store.delete(collection, [pid])
        if removals:
            _model(kind).objects.filter(pk__in=[r[2] for r in removals]).update(
                index_state=IndexState.INDEXED, index_error="", indexed_at=timezone.now()
            )
            report.removed = len(removals)
        if documents:
            embedder = get_embedder()
            vectors = embedder.embed_documents([d.text for d in documents])
            by_collection: dict[str, list] = {}
            from memory.stores.vectors import VectorPoint

            for document, vector in zip(documents, vectors, strict=True):
                by_collection.setdefault(document.collection, []).append(
                    VectorPoint(id=document.point_id, vector=vector, payload=document.payload)
                )
            for collection, points in by_collection.items():
                store.ensure_collection(collection, embedder.dimension)
                store.upsert(collection, points)
            _mark_indexed(kind, documents)
            report.indexed = len(documents)
    except EmbeddingInvalid as exc:
        ids = [i for d in documents for i in d.row_ids]
        _mark(kind, ids, state=IndexState.FAILED, error=str(exc))
        report.failed = len(documents)
        logger.warning("indexing %s %s failed: %s", kind, list(row_ids)[:10], exc)
    except StoreUnavailable as exc:
        ids = [i for d in documents for i in d.row_ids] + [r[2] for r in removals]
        _mark(kind, ids, state=IndexState.PENDING, error=str(exc))
        raise
    return report


def _reply_ids(kind: str, row_ids: Sequence[int]) -> set[int]:
    """Replies are indexed with their exchange: they are found, not gone."""
    if kind != KIND_MESSAGE:
        return set()
    return set(
        Message.objects.filter(pk__in=row_ids, reply_to__isnull=False).values_list("id", flat=True)
    )


def index_row(kind: str, row_id: int) -> IndexReport:
    """Index one row (what the Celery tasks call). Quiet when the row is gone."""
    return index_rows(kind, [row_id])


def point_remove(kind: str, row_id: int) -> None:
    """Remove a row's point from its collection (a hard-deleted row)."""
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store, point_id

    collection = CONVERSATIONS if kind == KIND_MESSAGE else KNOWLEDGE
    get_vector_store().delete(collection, [point_id(kind, row_id)])


# --- Enqueueing -------------------------------------------------------------------


def _send(kind: str, row_id: int) -> None:
    from memory import tasks

    task = {
        KIND_MESSAGE: tasks.message_index_task,
        KIND_FACT: tasks.fact_index_task,
        KIND_SUMMARY: tasks.summary_index_task,
    }[kind]
    try:
        task.delay(row_id)
    except Exception as exc:  # the broker is down: the sweep will pick the row up
        logger.warning("could not enqueue %s %s (%s); left for the sweep", kind, row_id, exc)


def index_enqueue(kind: str, row_id: int) -> None:
    """Index the row once the current transaction commits (fire-and-forget)."""
    transaction.on_commit(lambda: _send(kind, row_id))


def pending_sweep(*, now: datetime | None = None, limit: int = SWEEP_BATCH) -> dict[str, int]:
    """Re-enqueue pending rows left behind and failed rows whose backoff is over."""
    now = now or timezone.now()
    due = Q(index_retry_at__isnull=True) | Q(index_retry_at__lte=now)
    counts: dict[str, int] = {}
    for kind, model, age_field in (
        (KIND_MESSAGE, Message, "created_at"),
        (KIND_FACT, Fact, "updated_at"),
        (KIND_SUMMARY, Summary, "created_at"),
    ):
        pending = Q(index_state=IndexState.PENDING) & (
            Q(index_retry_at__lte=now)
            | Q(index_retry_at__isnull=True, **{f"{age_field}__lte": now - SWEEP_GRACE})
        )
        failed = Q(index_state=IndexState.FAILED, index_attempts__lt=MAX_ATTEMPTS) & due
        rows = model.objects.filter(pending | failed).order_by("id")
        ids = list(rows.values_list("id", flat=True)[:limit])
        if kind == KIND_MESSAGE:
            # A reply is indexed through its exchange, keyed by the user message.
            ids = sorted(set(_roots(ids)))
        for row_id in ids:
            _send(kind, row_id)
        counts[kind] = len(ids)
    return counts


def _roots(message_ids: Sequence[int]) -> list[int]:
    rows = Message.objects.filter(pk__in=message_ids).values_list("id", "reply_to_id")
    return [reply_to or mid for mid, reply_to in rows]
