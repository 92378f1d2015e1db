"""The keyword source in a process of its own, for a pre-hook alone on the machine.

Once the query vector exists, a lone pre-hook has about 7 ms of work left on
one interpreter: three Qdrant searches (Qdrant Edge holds the GIL through
each), FTS5's bm25 over both indexes, T1, hydration, fusion. SQLite ranks
without the GIL, but each statement takes it back between its steps (and for
its progress handler), behind whichever search holds it: the keyword stage
took 3.4 ms where it takes 1.2 alone. In a helper process it runs on the other
core beside the searches and T1, with no GIL to share (10,000 memories,
alternating per call on one store: what a call adds to its own query embedding
p50 8.74 -> 7.00 ms, p95 12.44 -> 10.45; total p50 26.6 -> 25.5, p95 33.9 -> 31.7).

In the process, the facts' query runs on a second thread and connection beside
the messages' (sources.keyword_search's ``facts_apart``): one after the other,
at 100,000 memories, the stage took 11.5 ms against 8.7 in the caller's thread
and the pre-hook was slower; side by side, what a call adds to its embedding
went down there too (mean 14.56 -> 13.55 ms, alternating per call).

The request leaves as soon as the vector exists, before the threads waiting on
it wake (a pipe write after they woke waited behind their GIL use: 1.2 ms p50
instead of 0.09). Before the vector the process would take a core from the
embedding's team. The process reads on its own connection, so only a caller
outside any transaction may use it (it would not see uncommitted rows), as for
the facts' own connection (sources.keyword_search); what it finds is hydrated
on the caller's connection, so a memory forgotten meanwhile is still dropped.

Anything else (not started, busy with another caller, dead, late) leaves the
keyword stage to the caller's thread as before, or records the source as
failed past its time limit: the pre-hook never raises. Until a late answer has
come back (and been dropped) no request goes to the process
(queued behind it, each would time out in turn: on a slow database the backlog
would only grow); a dead process is started again in the background, 10 s after
the last attempt, twice as long after each that no answer followed (up to 10
minutes: a start loads Django in a new interpreter).
`serve` and the benchmarks start it with the rest of the warm-up (retrieval_warm).
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

# How long a start waits for a new process to load Django and answer.
START_TIMEOUT_S = 30.0
# A dead process is started again by a pre-hook finding it dead, this long after the
# last attempt; twice as long after each attempt that no answered request followed (a
# start costs a new interpreter loading Django), up to RESTART_INTERVAL_MAX_S.
RESTART_INTERVAL_S = 10.0
RESTART_INTERVAL_MAX_S = 600.0


def _clock() -> float:
    return time.monotonic()


@dataclass
class KeywordsRequest:
    """One pre-hook's use of the process: sent once the vector exists, answered once."""

    text: str
    limit: int
    timeout_s: float
    database: str
    request_id: int
    pipe: Any  # the process's end of the pipe when asked (a restart gives another)
    busy: threading.Lock  # the process's lock this request holds until answered
    sent: bool = False
    given_up: bool = False  # the caller stopped waiting before it was sent
    elapsed_ms: float = 0.0  # the process's own time for it
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self) -> None:
        """Ask the process (called in the semantic thread as the vector is ready)."""
        with self._lock:
            if self.given_up:
                return
            try:
                self.pipe.send(
                    (self.request_id, self.database, self.text, self.limit, self.timeout_s)
                )
            except Exception as exc:  # a dead process: the caller ranks the keywords itself
                logger.warning("the keyword process is gone: %s", exc)
                _gone(self.pipe)
                return
            self.sent = True

    def result(self, deadline: float) -> list[tuple[str, float]] | None:
        """The ranked keyword ids; None when the request never left (the caller ranks them
        itself). Raises TimeoutError past ``deadline`` (time.monotonic), RuntimeError with
        the process's error. Call it once."""
        try:
            with self._lock:
                if not self.sent:
                    self.given_up = True
                    return None
            try:
                answered = self.pipe.poll(max(0.0, deadline - time.monotonic()))
                if answered:
                    request_id, ok, value, elapsed_ms = self.pipe.recv()
            except (EOFError, OSError) as exc:
                _gone(self.pipe)
                raise RuntimeError(f"the keyword process is gone: {exc}") from exc
            if not answered:
                _process.late += 1  # no request goes to it until this answer is drained
                raise TimeoutError(f"timeout after {int(self.timeout_s * 1000)} ms")
            if request_id != self.request_id:  # late answers are drained before one is sent
                _gone(self.pipe)
                raise RuntimeError(
                    f"the keyword process answered {request_id} for {self.request_id}"
                )
            self.elapsed_ms = round(elapsed_ms, 2)
            if not ok:
                raise RuntimeError(value)
            _process.answered += 1
            _process.restarts = 0
            return value
        finally:
            self.busy.release()


def _gone(pipe: Any) -> None:
    """The process at the other end of ``pipe`` is dead (not a newer one started since)."""
    if _process.pipe is pipe:
        _process.alive = False


class _Process:
    def __init__(self) -> None:
        self.handle: Any = None
        self.pipe: Any = None
        self.alive = False
        self.wanted = False  # started, and not stopped since: a dead one is restarted
        self.restarted_at = float("-inf")  # _clock() of the last start tried
        self.restarts = 0  # restarts tried since the last start asked or request answered
        self.busy = threading.Lock()  # one request in flight
        self.ids = itertools.count(1)
        self.answered = 0  # requests answered in time
        # Requests given up on whose answers have not come back: while there are any,
        # the process is still busy with them, and a new request would wait behind.
        self.late = 0
        self.start_lock = threading.Lock()


_process = _Process()


def keywords_process_start() -> bool:
    """Start the process (idempotent) and wait until it answers; False if it could not.
    From then on a process found dead is started again in the background
    (RESTART_INTERVAL_S after the last attempt, longer after each one that no answer
    followed), until keywords_process_stop()."""
    with _process.start_lock:
        _process.wanted = True
        _process.restarts = 0
        started = _start()
        # A start that failed counts as the last attempt: the next waits after it.
        _process.restarted_at = float("-inf") if started else _clock()
        return started


def _start() -> bool:
    """Start it unless it is up. Hold start_lock."""
    if _process.alive and _process.handle is not None and _process.handle.is_alive():
        return True
    _stop()
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    handle = context.Process(target=_serve, args=(child,), name="makilab-keywords", daemon=True)
    try:
        handle.start()
        child.close()
        if not parent.poll(START_TIMEOUT_S) or parent.recv() != "ready":
            raise RuntimeError("no answer")
    except Exception as exc:
        logger.warning("the keyword process did not start: %s", exc)
        parent.close()
        child.close()
        if handle.pid is not None:  # started, but it never said it was ready
            handle.kill()
            handle.join(timeout=5)
        return False
    _process.handle, _process.pipe, _process.alive = handle, parent, True
    _process.busy = threading.Lock()  # a request left on the last one holds the old
    _process.late = 0  # the answers the last one owed died with it
    return True


def _restart_in_background() -> None:
    """Start a dead process again, off the caller's thread (a start takes a second or two)."""
    now = _clock()
    wait = min(RESTART_INTERVAL_MAX_S, RESTART_INTERVAL_S * 2 ** min(_process.restarts, 16))
    if now - _process.restarted_at < wait:
        return
    _process.restarted_at = now
    _process.restarts += 1

    def restart() -> None:
        with _process.start_lock:
            if _process.wanted:  # not stopped meanwhile
                logger.info("restarting the keyword process")
                _start()

    threading.Thread(target=restart, name="keywords-process-restart", daemon=True).start()


def keywords_process_state() -> dict:
    """Whether the process is up, and how many requests it answered in time."""
    return {"alive": _process.alive, "answered": _process.answered}


def keywords_process_stop() -> None:
    """Stop the process and its restarts (tests; a daemon process ends with this one)."""
    with _process.start_lock:
        _process.wanted = False
        _process.restarts, _process.restarted_at = 0, float("-inf")
        _stop()


def _stop() -> None:
    handle, pipe = _process.handle, _process.pipe
    _process.handle, _process.pipe, _process.alive = None, None, False
    if pipe is not None:
        pipe.close()  # the process ends on EOF
    if handle is not None:
        handle.join(timeout=5)
        if handle.is_alive():
            handle.kill()


def keywords_request(text: str, *, limit: int, timeout_s: float) -> KeywordsRequest | None:
    """A request for this pre-hook, or None: the process is not there, or another
    pre-hook uses it, or the caller is inside a transaction (the process would not
    see its uncommitted rows) or on an in-memory database."""
    from django.db import connection

    if not _process.alive:
        if _process.wanted:
            _restart_in_background()
        return None
    if connection.in_atomic_block or connection.is_in_memory_db():
        return None
    busy, pipe = _process.busy, _process.pipe
    if pipe is None or not busy.acquire(blocking=False):
        return None
    try:
        while _process.late and pipe.poll(0):
            pipe.recv()  # an answer nobody waits for any more
            _process.late -= 1
    except (EOFError, OSError):
        _gone(pipe)
    if _process.late or not _process.alive:
        # Still at work on a request given up on (a slow database): this caller ranks its
        # keywords itself rather than queue behind it, and time out in turn.
        busy.release()
        return None
    return KeywordsRequest(
        text=text,
        limit=limit,
        timeout_s=timeout_s,
        database=str(connection.settings_dict["NAME"]),
        request_id=next(_process.ids),
        pipe=pipe,
        busy=busy,
    )


def _serve(pipe) -> None:
    """The process: rank the keywords of each request on its own connection."""
    # Ctrl-C in a terminal reaches the whole process group: this one ends when `serve`
    # does (its pipe closes), without a KeyboardInterrupt traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "makilab.settings")
    import django

    django.setup()
    from django.db import connection

    from memory.services.retrieval.sources import keyword_search
    from memory.stores.fts import sql_deadline

    pipe.send("ready")
    database = None
    while True:
        try:
            request_id, name, text, limit, timeout_s = pipe.recv()
        except (EOFError, OSError):
            return
        start = time.perf_counter()
        try:
            if name != database:  # the caller's database changed (a throw-away memory)
                connection.close()
                connection.settings_dict["NAME"] = name
                database = name
            with sql_deadline(timeout_s):
                ok, value = True, keyword_search(text, limit=limit, facts_apart=timeout_s)
        except Exception as exc:
            connection.close()
            database = None
            ok, value = False, f"{type(exc).__name__}: {exc}"
        answer = (request_id, ok, value, (time.perf_counter() - start) * 1000)
        try:
            pipe.send(answer)
        except (EOFError, OSError):
            return
