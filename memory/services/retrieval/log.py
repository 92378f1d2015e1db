"""The memory_retrievals row of an auto-retrieval, written off the pre-hook's critical path.

The row (and the access counts of the facts injected) is a commit: with
``synchronous=FULL`` an fsync, 1 ms usually and tens of ms when the disk
flushes. The prompt does not need it, so auto_retrieve hands the row to one
writer thread and returns. What reads the log stays consistent:
``recently_injected`` (the carried memories and the near-duplicate check of the
next message) reads the rows still queued beside the table, each turn once
(``channel_turns``), and ``retrieval_id`` waits for its own row. A caller
inside a transaction gets its row written at once, in its transaction (rolled
back with it).
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from memory.models import MemoryRetrieval
from memory.services.formatting import clean_text
from memory.services.preview_rule import REDACTED, PreviewRule
from memory.services.removal import memories_present, previews_forgotten_since
from memory.services.retrieval.result import RetrievalResult
from memory.stores.compiled import CompiledRead, param
from memory.stores.thread_connection import connection_follow

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 200
# How long a reader waits for a pending log row before reading without it.
LOG_WAIT_SECONDS = 10.0

# Rows waiting for the writer when it wakes are written in one transaction, at most this many.
LOG_BATCH_MAX = 64
# The writer closes its connection after this long without a row.
LOG_IDLE_CLOSE_S = 1.0
# A waiting row is checked against the forgets made since its retrieval, less this: a
# forget's transaction (its row's date taken at its start) lasts far less.
FORGET_RACE_MARGIN = timedelta(minutes=1)


@dataclass(eq=False)
class _Queued:
    """A row handed to the writer: the turn's memories, the future of its row id, and
    that id from its INSERT on, before the commit that makes the row visible (so a
    reader that finds the row in the table knows it is this one, announced or not);
    ``refused`` once the database refused its INSERT (it will never be in the table,
    though the rows after it in its batch may be, before either is announced)."""

    memories: list[dict]
    future: Future = field(default_factory=Future)
    queued_at: datetime = field(default_factory=timezone.now)
    inserted_id: int | None = None
    refused: bool = False

    def failed(self) -> bool:
        """Known never to be in the table: refused in its batch, or announced without an
        id (its batch's commit failed)."""
        return self.refused or (self.future.done() and self.future.result() is None)


class _LogWriter:
    """One thread writing the queued rows in the order the retrievals finished.

    The rows that queued while it was busy go in one transaction (one commit,
    one fsync), so a burst of retrievals from concurrent callers costs one
    flush, not one each; each row still has its own savepoint, so a row that
    fails is logged and dropped alone. Its connection is kept while rows keep
    coming (opening one costs about a millisecond of CPU, taken from the next
    pre-hook's embedding), closed once the queue has been empty for
    LOG_IDLE_CLOSE_S, and reopened when the database it points to changes
    (the thread outlives requests, and a benchmark's throw-away database).
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, fields: dict, accessed: list[int]) -> _Queued:
        entry = _Queued(memories=fields["memories"])
        entry.future.set_running_or_notify_cancel()
        self._queue.put((entry, fields, accessed))
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="retrieval-log_0", daemon=True
                )
                self._thread.start()
        return entry

    def _run(self) -> None:
        opened_on = None  # the database file the open connection points to
        while True:
            try:
                first = self._queue.get(timeout=LOG_IDLE_CLOSE_S)
            except queue.Empty:
                connection.close()
                first = self._queue.get()
            batch = [first]
            while len(batch) < LOG_BATCH_MAX:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            opened_on = connection_follow(opened_on)
            _announce([entry for entry, _, _ in batch], committed=self._write_batch(batch))

    @staticmethod
    def _write_batch(batch: list[tuple[_Queued, dict, list[int]]]) -> bool:
        """Write the rows in one transaction, each known by its id before the commit;
        False when the commit itself failed (every row of the batch lost)."""
        try:
            with transaction.atomic():
                # Rows that waited for this thread: what they show may be forgotten since.
                since = min(entry.queued_at for entry, _, _ in batch) - FORGET_RACE_MARGIN
                previews = previews_forgotten_since(since)
                shown = {m["id"] for _, fields, _ in batch for m in fields["memories"] if "id" in m}
                present = memories_present(shown) if shown else set()
                for entry, fields, accessed in batch:
                    # Each in its own savepoint; None when the database refused it.
                    _forgotten_redacted(fields, previews, present)
                    entry.inserted_id = _write(fields, accessed)
                    entry.refused = entry.inserted_id is None
        except Exception:
            logger.exception("could not log %d auto-retrievals", len(batch))
            connection.close()
            return False
        return True


def _announce(entries: list[_Queued], *, committed: bool) -> None:
    """After the batch's commit: each row's id (None: not written) to whoever waits."""
    for entry in entries:
        entry.future.set_result(entry.inserted_id if committed else None)


_writer = _LogWriter()
# Per channel, the rows this process handed to the writer, oldest first; an entry
# leaves once its row is written (or failed) and a reader has seen it announced.
_pending: dict[str, list[_Queued]] = {}
_pending_lock = threading.Lock()


def _pending_live(channel: str) -> list[_Queued]:
    """The channel's entries whose row is not announced yet; the others leave. Hold the lock."""
    entries = [entry for entry in _pending.get(channel, ()) if not entry.future.done()]
    if entries:
        _pending[channel] = entries
    else:
        _pending.pop(channel, None)
    return entries


def retrieval_log_start(result: RetrievalResult) -> None:
    """Log this retrieval; in the writer thread unless the caller holds a transaction.

    The row's fields are taken now, so later changes to ``result`` do not leak
    into the log; ``result.retrieval_id`` waits for the row when it is read.
    """
    fields, accessed = _row_fields(result), _accessed_ids(result)
    if connection.in_atomic_block:
        # The caller's transaction must own the row: another connection would not
        # see its uncommitted data, nor be rolled back with it.
        result.retrieval_id = _write(fields, accessed)
        return
    with _pending_lock:
        entry = _writer.submit(fields, accessed)
        _pending[result.channel] = [*_pending_live(result.channel), entry]
        result.log_future = entry.future


def retrieval_logs_wait(*, timeout: float = LOG_WAIT_SECONDS) -> None:
    """Wait until the log rows started so far are written or failed (tests, benchmarks).

    One writer writes in order, so waiting for each channel's last row started
    waits for every row before it.
    """
    with _pending_lock:
        pending = [entries[-1].future for entries in _pending.values() if entries]
    for future in pending:
        try:
            future.result(timeout=timeout)
        except Exception:  # a failed write is logged by the writer; a slow one is waited no more
            logger.warning("a retrieval log row is still pending after %.0f s", timeout)
    with _pending_lock:
        for name in list(_pending):
            _pending_live(name)


def _last_turns(_now: datetime, turns: int):
    """The channel's last ``turns`` log rows, newest first (one compiled SQL per ``turns``)."""
    return (
        MemoryRetrieval.objects.filter(channel=param("channel"))
        .order_by("-created_at", "-id")
        .values_list("id", "memories")[:turns]
    )


_LAST_TURNS = CompiledRead(_last_turns)


def channel_turns(channel: str, turns: int) -> list[list[dict]]:
    """What the channel's last ``turns`` retrievals injected (their rows' memories), newest
    first, the rows still in the writer's queue included: nothing waits for a commit.

    The single writer writes in order, so a row not committed when the table is
    read is newer than every row read. A queued row knows its id from its INSERT,
    before its commit: one found in the table (its id at most the newest read) is
    not counted again, even while its id is not announced yet. Each turn is
    counted once, whenever its commit lands; a row the database refused counts no
    more once the writer knows it (the rows after it in its batch may already be
    in the table: counted from the queue, it would come before them).
    """
    if turns <= 0:
        return []
    with _pending_lock:
        entries = _pending_live(channel)  # announced ones were committed before the read below
    stored = _LAST_TURNS.rows(channel=channel, shape=(turns,))
    newest_stored = max((row_id for row_id, _ in stored), default=0)
    unwritten = []
    for entry in entries:
        if entry.failed():
            continue  # never in the log (and older than the rows after it)
        if entry.inserted_id is not None and entry.inserted_id <= newest_stored:
            continue  # committed before the table was read: in ``stored`` (or deeper)
        unwritten.append(entry.memories)
    return [*reversed(unwritten), *(memories for _, memories in stored)][:turns]


def _accessed_ids(result: RetrievalResult) -> list[int]:
    return [
        int(m["id"].split(":")[1])
        for m in result.memories
        if m["kind"] == "fact" and not m.get("carried")
    ]


def _row_fields(result: RetrievalResult) -> dict:
    return {
        "channel": result.channel,
        "message_preview": clean_text(result.message, max_chars=PREVIEW_CHARS),
        "memories": [
            {
                "id": m["id"],
                "kind": m["kind"],
                "sources": m["sources"],
                "rrf": m["rrf"],
                "score": m["score"],
                "text": m["text"][:PREVIEW_CHARS],
                **({"carried": True} if m.get("carried") else {}),
            }
            for m in [*result.memories, *result.live]
        ],
        "notes": [{"path": n["path"], "chars": len(n["text"])} for n in result.notes],
        "tokens_added": result.tokens_added,
        "timings_ms": dict(result.timings_ms),
        "total_ms": result.total_ms,
        "failed_sources": dict(result.failed_sources),
    }


def _forgotten_redacted(fields: dict, previews: PreviewRule, present: set[str]) -> None:
    """Redact in this row, about to be written, the text of every memory forgotten or
    erased since its retrieval, and its message's preview as the passes of the forgets
    made meanwhile (``previews``) would have: a forget committed while the row waited
    for the writer ran its redaction of the logs before the row existed. Called inside
    the writing transaction, which holds SQLite's write lock: a forget commits before
    it (seen here) or after it (its own pass then sees the row). A row written at once
    in its caller's transaction needs none: that transaction held the lock from the start.
    ``present``: which of the batch's memories are still in memory (read once a batch)."""
    for memory in fields["memories"]:
        if "id" in memory and memory["id"] not in present:
            memory["text"] = REDACTED
    if previews.hits(fields["message_preview"]):
        fields["message_preview"] = REDACTED


def _write(fields: dict, accessed: list[int]) -> int | None:
    from memory.services.fact_access import facts_accessed

    try:
        with transaction.atomic():  # in a batch, its own savepoint
            facts_accessed(accessed)
            return MemoryRetrieval.objects.create(**fields).pk
    except DatabaseError:
        logger.exception("could not log the auto-retrieval")
        return None
