"""The embedded default's background side: a Celery worker and a scheduler in threads.

An embedded Qdrant folder has ONE owner process, so in the embedded default the
web server, the worker and the periodic tasks live in one process and share one
store handle. The worker consumes the in-process broker (memory://) with a
thread pool; the scheduler sends the beat schedule's tasks itself (Celery's
embedded beat is a separate process model that does not fit here). A lost
in-memory queue on a crash is harmless: rows keep their pending state and the
sweep, run at start-up and every minute, enqueues them again.
"""

from __future__ import annotations

import logging
import threading

from celery import Celery

logger = logging.getLogger(__name__)

FIRST_RUN_DELAY_S = 2.0
# A worker that stopped on its own (an error Celery calls unrecoverable) is started again
# after this long, twice as long after each stop that came soon after its start.
RESTART_DELAY_S = 1.0
RESTART_DELAY_MAX_S = 60.0
# A worker that ran this long before it stopped starts again after RESTART_DELAY_S.
RESTART_RESET_AFTER_S = 60.0


def broker_in_process() -> bool:
    """Whether Celery's broker is the in-process one (memory://): a queue of this process
    alone, read only by a worker running in it (serve's)."""
    from django.conf import settings

    return settings.CELERY_BROKER_URL.startswith("memory://")


def tasks_reach_a_worker() -> bool:
    """Whether a task this process sends will run: on a broker other processes read, inline
    (eager), or on serve's worker in this process. Not from a command run beside serve on
    the in-process broker (memory://): its queue is its own, and dies with it."""
    from makilab.celery import app

    return not broker_in_process() or bool(app.conf.task_always_eager) or EmbeddedWorker.running


class EmbeddedWorker:
    """A Celery worker (threads pool) running in a background thread of this process, and
    started again when it stops on its own.

    Celery ends a worker on an error it calls unrecoverable: with a Redis broker that went
    away while the worker held a task it had not acknowledged, kombu's restore of that task
    raised (AttributeError on the lost connection) and the worker stopped for good, while
    the API kept taking messages (QA: every later row pending until `serve` was restarted).
    A broker that is down delays the work, never stops it: a new worker is started after
    RESTART_DELAY_S, doubling up to RESTART_DELAY_MAX_S while it keeps stopping, and it
    reconnects when the broker is back (the unacknowledged task is delivered again).
    """

    # Whether one runs in this process (tasks_reach_a_worker).
    running = False

    def __init__(self, app: Celery, *, concurrency: int = 2) -> None:
        self.app = app
        self.concurrency = concurrency
        self._worker = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.starts = 0  # how many workers were started (tests)

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._supervise, name="celery-worker", daemon=True)
        self._thread.start()
        EmbeddedWorker.running = True

    def _controller(self):
        return self.app.WorkController(
            hostname="makilab-embedded@%h",
            pool_cls="threads",
            concurrency=self.concurrency,
            loglevel="WARNING",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            task_events=False,
        )

    def _supervise(self) -> None:
        import time

        delay = RESTART_DELAY_S
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self._worker = worker = self._controller()
                if self._stopping.is_set():  # stop() came while it was being made
                    return
                self.starts += 1
                worker.start()  # returns once the worker stopped
            except BaseException:  # the supervisor outlives its worker, and its making
                logger.exception("the embedded Celery worker failed")
            if self._stopping.is_set():
                return
            if time.monotonic() - started >= RESTART_RESET_AFTER_S:
                delay = RESTART_DELAY_S
            logger.warning("the embedded Celery worker stopped: a new one in %.0f s", delay)
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, RESTART_DELAY_MAX_S)

    def stop(self, timeout: float = 10.0) -> None:
        EmbeddedWorker.running = False
        self._stopping.set()
        if self._worker is not None:
            self._worker.stop()
        if self._thread is not None:
            self._thread.join(timeout)


class Scheduler:
    """Sends each task of the beat schedule at its interval, from a background thread."""

    def __init__(self, app: Celery, schedule: dict | None = None) -> None:
        self.app = app
        self.schedule = schedule if schedule is not None else dict(app.conf.beat_schedule)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        import time

        intervals = {name: float(entry["schedule"]) for name, entry in self.schedule.items()}
        next_run = {name: time.monotonic() + FIRST_RUN_DELAY_S for name in self.schedule}
        while not self._stop.is_set():
            now = time.monotonic()
            for name, entry in self.schedule.items():
                if now >= next_run[name]:
                    next_run[name] = now + intervals[name]
                    try:
                        self.app.send_task(entry["task"])
                    except Exception:  # never let the scheduler die on a broker hiccup
                        logger.exception("could not send the periodic task %s", name)
            self._stop.wait(max(0.05, min(next_run.values()) - time.monotonic()))
