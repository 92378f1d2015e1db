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
    """A Celery worker (threads pool) running in a background thread of this process."""

    # Whether one runs in this process (tasks_reach_a_worker).
    running = False

    def __init__(self, app: Celery, *, concurrency: int = 2) -> None:
        self.app = app
        self.concurrency = concurrency
        self._worker = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._worker = self.app.WorkController(
            hostname="makilab-embedded@%h",
            pool_cls="threads",
            concurrency=self.concurrency,
            loglevel="WARNING",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            task_events=False,
        )
        self._thread = threading.Thread(
            target=self._worker.start, name="celery-worker", daemon=True
        )
        self._thread.start()
        EmbeddedWorker.running = True

    def stop(self, timeout: float = 10.0) -> None:
        EmbeddedWorker.running = False
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
