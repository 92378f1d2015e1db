"""T1 → T2, the enqueueing side of the indexing state machine (memory.services.indexing).

The ``change`` and ``create`` steps (a row's point must change: its version
is bumped, its task sent on commit), the batches a task fills with the other
due rows, and the ``sweep`` that re-sends what a lost message or a restart
left pending. The claim step is memory.services.index_claims; the write and
finish steps, and the machine's whole description, are in memory.services.indexing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from memory.models import Indexable, IndexState, Message, MessageRole
from memory.services.index_documents import INDEXED_ROLES, KIND_MESSAGE, KINDS, model_for
from memory.stores.compiled import CompiledRead, ids_in

logger = logging.getLogger(__name__)

# A row whose task was sent less than this ago is left to that task by the sweep.
QUEUE_GRACE = timedelta(minutes=2)
SWEEP_BATCH = 500
# A link of a chain of sweeps finding the workers a full sweep behind looks again this later.
SWEEP_WAIT_S = 2.0
# Rows embedded together by one indexing task (the local embedder's sweet spot).
INDEX_BATCH = 32


# --- change -----------------------------------------------------------------------------


def _message_links(_now):
    return Message.all_objects.filter(pk__in=ids_in()).values_list("id", "reply_to_id", "role")


def _indexed_messages(_now):
    return Message.all_objects.filter(pk__in=ids_in(), role__in=INDEXED_ROLES).values_list("id")


# The indexing task's reads run on every task, most of them finding their rows
# current: compiled once (stores/compiled.py), not built by the ORM each time.
_MESSAGE_LINKS = CompiledRead(_message_links)
_INDEXED_MESSAGES = CompiledRead(_indexed_messages)


def exchange_roots(message_ids: Iterable[int]) -> tuple[set[int], set[int], set[int]]:
    """(exchange root ids, ids of messages that never get a point, ids that exist).

    A system or tool message, or a reply to one, has no exchange point.
    """
    rows = {
        mid: (reply_to, role)
        for mid, reply_to, role in _MESSAGE_LINKS.rows(ids=[int(i) for i in message_ids])
    }
    asked = [r for r, _ in rows.values() if r]
    parents = {pid for (pid,) in _INDEXED_MESSAGES.rows(ids=asked)} if asked else set()
    roots, skipped = set(), set()
    for mid, (reply_to, role) in rows.items():
        if role not in INDEXED_ROLES or (reply_to and reply_to not in parents):
            skipped.add(mid)
        else:
            roots.add(reply_to or mid)
    return roots, skipped, set(rows)


def rows_changed(kind: str, row_ids: Iterable[int], *, send: bool = True) -> None:
    """Record that these rows' points must change, and index them after commit.

    Call inside the transaction that made the change. For messages, any message
    of an exchange may be given: its root is bumped. ``send`` False: no task is
    sent and the rows are not marked queued, left to the next sweep (a command
    whose tasks reach no worker: makilab.runtime.tasks_reach_a_worker).
    """
    ids = list(row_ids)
    if kind == KIND_MESSAGE:
        roots, skipped, _ = exchange_roots(ids)
        messages_skip(skipped)
        ids = sorted(roots)
    if not ids:
        return
    now = timezone.now()
    fields = {
        "version": F("version") + 1,
        "index_state": IndexState.PENDING,
        "index_attempts": 0,
        "index_error": "",
        "index_retry_at": None,
        "index_queued_at": now if send else None,
    }
    model_for(kind).all_objects.filter(pk__in=ids).update(**fields)
    if kind == KIND_MESSAGE:
        exchange_replies(ids).update(**{k: v for k, v in fields.items() if k != "version"})
    if send:
        transaction.on_commit(lambda: _send(kind, ids))


def messages_skip(message_ids: set[int]) -> int:
    """Mark messages that never get a point skipped, with their replies.

    A reply is saved with its root's id (message_save enqueues the exchange): the
    agent's reply to a system message must not stay pending behind its root.
    """
    if not message_ids:
        return 0
    return Message.all_objects.filter(
        Q(pk__in=message_ids) | Q(reply_to_id__in=message_ids)
    ).update(index_state=IndexState.SKIPPED)


def index_enqueue(kind: str, row_id: int) -> None:
    """The row changed: bump its version and index it once the transaction commits."""
    rows_changed(kind, [row_id])


def row_created_queued(row: Indexable) -> None:
    """Before the INSERT of a row that is its own point (a new exchange root): mark it queued.

    A new row is pending at version 1 by its defaults, a version no point ever
    had (``indexed_version`` 0): the change step has nothing to bump. After
    the save, ``row_created_send`` sends its task on commit.
    """
    row.index_queued_at = timezone.now()


def row_created_send(kind: str, row_id: int) -> None:
    """After the INSERT marked by ``row_created_queued``: index it once the transaction commits."""
    transaction.on_commit(lambda: _send(kind, [row_id]))


def exchange_replies(root_ids: Sequence[int]):
    return Message.all_objects.filter(reply_to_id__in=list(root_ids), role=MessageRole.ASSISTANT)


# --- enqueueing and the sweep ---------------------------------------------------------------


def _send(kind: str, row_ids: Sequence[int]) -> None:
    """One indexing task per batch of rows; a broker that is down leaves them to the sweep."""
    from memory import tasks

    ids = list(row_ids)
    for start in range(0, len(ids), INDEX_BATCH):
        chunk = ids[start : start + INDEX_BATCH]
        try:
            tasks.index_batch_task.delay(kind, chunk)
        except Exception as exc:  # the broker is down: the sweep will pick the rows up
            logger.warning("could not enqueue %s %s (%s); left for the sweep", kind, chunk, exc)


def _due(now: datetime) -> Q:
    """Pending rows whose retry time has come and that no live lease holds."""
    return (
        Q(index_state=IndexState.PENDING)
        & (Q(index_retry_at__isnull=True) | Q(index_retry_at__lte=now))
        & (Q(index_lease_until__isnull=True) | Q(index_lease_until__lt=now))
    )


def batch_fill(kind: str, row_ids: Sequence[int], *, limit: int = INDEX_BATCH) -> list[int]:
    """These rows plus other due rows of the kind, up to ``limit``, to index in one batch.

    Rows that arrive together (a burst of messages, each sending its own task)
    are embedded in one batch by whichever task runs first; the tasks of the
    others then find their row current and stop at once.
    """
    ids = list(dict.fromkeys(int(i) for i in row_ids))
    room = limit - len(ids)
    if room > 0:
        due = _DUE_READS[kind].rows(ids=ids, now=timezone.now(), shape=(limit,))
        ids += [row_id for (row_id,) in due[:room]]
    return ids


def _due_read(kind: str) -> CompiledRead:
    """Due rows of a kind (exchange roots for messages) but ``ids``, oldest first."""

    def build(now, limit):
        others = model_for(kind).all_objects.filter(_due(now)).exclude(pk__in=ids_in())
        if kind == KIND_MESSAGE:
            others = others.filter(reply_to__isnull=True)
        return others.order_by("id").values_list("id")[:limit]

    return CompiledRead(build)


_DUE_READS = {kind: _due_read(kind) for kind in KINDS}


def pending_sweep(
    *, now: datetime | None = None, limit: int | None = None, chained: bool = False
) -> dict[str, int]:
    """Re-send pending rows that are due, not queued recently and not leased.

    At most ``limit`` rows a kind (SWEEP_BATCH). A sweep that found that many sends the
    next sweep itself (``chained``), behind the batches it sent: a backlog (an import,
    a restart after a crash) is indexed at the worker's pace, where it went at one
    sweep a minute (512 rows). Every row read is marked queued, replies with their
    roots, so the next sweep reads other rows and the chain ends once the backlog is
    sent. While the workers still have a full sweep's rows to do (several workers took
    the next link at once, or the periodic sweep started a second chain), a sweep sends
    nothing more: the queue never holds much more than two sweeps' rows, whose marks
    would otherwise expire in it (QUEUE_GRACE) and be sent again. A link then looks
    again SWEEP_WAIT_S later.
    """
    now = now or timezone.now()
    limit = SWEEP_BATCH if limit is None else limit
    counts: dict[str, int] = dict.fromkeys(KINDS, 0)
    if queued_ahead(now) >= limit:
        if chained:
            _sweep_send(countdown=SWEEP_WAIT_S)
        return counts
    full = False
    for kind in KINDS:
        model = model_for(kind)
        due = _due(now) & (
            Q(index_queued_at__isnull=True) | Q(index_queued_at__lte=now - QUEUE_GRACE)
        )
        rows = model.all_objects.filter(due).order_by("id")
        read = list(rows.values_list("id", flat=True)[:limit])
        full = full or len(read) == limit
        ids = read
        if kind == KIND_MESSAGE:
            # Rows that never get a point (left pending by older code): settled here.
            roots, skipped, _ = exchange_roots(read)
            messages_skip(skipped)
            ids = sorted(roots)
        model.all_objects.filter(pk__in={*read, *ids}).update(index_queued_at=now)
        _send(kind, ids)
        counts[kind] = len(ids)
    if full:
        _sweep_send()
    return counts


def queued_ahead(now: datetime) -> int:
    """Pending rows whose task was sent within QUEUE_GRACE and has not run (or runs now):
    what the workers still have to do. A row backing off after a failure is not."""
    waiting = (
        Q(index_state=IndexState.PENDING)
        & Q(index_queued_at__gt=now - QUEUE_GRACE)
        & (Q(index_retry_at__isnull=True) | Q(index_retry_at__lte=now))
    )
    return sum(model_for(kind).all_objects.filter(waiting).count() for kind in KINDS)


def _sweep_send(*, countdown: float = 0) -> None:
    """Send the next sweep of a chain (after ``countdown`` seconds); a broker that is down
    leaves the rest to the periodic one."""
    from memory import tasks

    options: dict = {"kwargs": {"chained": True}}
    if countdown:
        if tasks.pending_sweep_task.app.conf.task_always_eager:
            return  # tasks run inline: nothing is ahead but rows that cannot move now
        options["countdown"] = countdown
    try:
        tasks.pending_sweep_task.apply_async(**options)
    except Exception as exc:
        logger.warning("could not enqueue the next sweep (%s); left for the periodic one", exc)


def restart_recover() -> int:
    """Void every lease and queued mark: only for the single owner of an in-process queue.

    When the embedded runtime starts, its in-memory queue is empty and no other
    worker exists: a lease or a "queued" mark left by the previous process (a
    SIGKILL, a SIGTERM mid-task) holds nothing. Clearing them lets the first
    sweep re-send that work at once. Returns the rows released.
    """
    released = 0
    for kind in KINDS:
        rows = model_for(kind).all_objects.filter(
            ~Q(index_lease_token="") | Q(index_queued_at__isnull=False)
        )
        released += rows.update(index_lease_token="", index_lease_until=None, index_queued_at=None)
    return released
