"""Durable background jobs: fact extraction, compaction, … survive a stop or a crash.

The Celery message of a job is only a wake-up call; the job itself is a row
(memory.models.Job) written in the same transaction as the change that needs
it, so a stop, a crash, a lost in-memory queue or a broker outage delays the
work and never drops it. The life of a job:

    enqueue  a row in state queued, unique by ``key`` (one extraction per
             exchange: enqueueing twice does nothing); its task is sent on commit
    claim    ``job_run`` takes a lease (token + expiry) with a conditional
             UPDATE: a job leased by a live worker, done, failed or not due yet
             is left alone
    run      the handler registered for its kind, ``handler(payload, checkpoint=...)``;
             handlers are idempotent: what must not be done twice (the LLM's
             answer of an extraction) is saved with ``checkpoint(**fields)`` into
             the payload, conditional on the lease, so a run after a crash reuses
             it, and storing the same facts again writes nothing
    finish   done, conditional on our lease; a failure counts an attempt and
             backs off (run_after), then ends ``failed`` with its error after
             MAX_ATTEMPTS; "no LLM configured" waits without burning attempts
    sweep    every minute, re-sends the queued jobs that are due and not queued
             recently, and gives back the jobs whose worker died (lease expired)
"""

from __future__ import annotations

import importlib
import logging
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory.exceptions import StoreUnavailable
from memory.models import Job, JobState

logger = logging.getLogger(__name__)

# kind -> "module:function(payload: dict, *, checkpoint) -> dict"; imported when a job runs.
HANDLERS = {
    "extract": "agent.extraction_jobs:job_extract",
    "compact": "agent.compaction:job_compact",
    "points_remove": "memory.services.removal:job_points_remove",
    "digest": "agent.digest:job_digest",
}
LEASE = timedelta(minutes=5)
QUEUE_GRACE = timedelta(minutes=2)
MAX_ATTEMPTS = 5
BACKOFF_BASE_S = 30
BACKOFF_CAP_S = 3600
# Without an LLM a job waits: it is tried again this much later, attempts untouched.
WAIT_FOR_CONFIGURATION = timedelta(hours=1)
ERROR_MAX_CHARS = 500
SWEEP_BATCH = 200


class JobLeaseLost(Exception):
    """Our lease ended (a restart voided it, or the run outlasted LEASE): another run owns the job."""


class JobWait(Exception):
    """Raised by a handler whose job cannot run yet (what it reads is held, e.g. by a
    forget that can still be undone): back in the queue until ``until``, attempts untouched.

    ``held``: asked again once the wait is written; False (released meanwhile: an undo that
    committed while the job ran sends nothing, jobs_send sends queued jobs only), the job
    is due at once. Asked after the write, so a release lands before the question (seen)
    or after the write (the job is queued: the release's jobs_send finds it)."""

    def __init__(
        self, message: str, *, until: datetime, held: Callable[[], bool] | None = None
    ) -> None:
        super().__init__(message)
        self.until = until
        self.held = held


def _handler(kind: str):
    module, _, name = HANDLERS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def _send(job_id: int) -> None:
    from memory import tasks

    try:
        tasks.job_run_task.delay(job_id)
    except Exception as exc:  # the broker is down: the sweep sends it later
        logger.warning("could not enqueue job %s (%s); left for the sweep", job_id, exc)


def job_enqueue(*, kind: str, key: str, payload: dict, send: bool = True) -> Job:
    """Record a job in the current transaction and send it once committed (idempotent on key).

    ``send=False``: the caller runs it itself after the commit (``job_run``); if that run
    never happens (the process stopped), the sweep sends it like any lost message.
    """
    if kind not in HANDLERS:
        raise ValueError(f"unknown job kind {kind!r}")
    job, created = Job.objects.get_or_create(
        key=key, defaults={"kind": kind, "payload": payload, "queued_at": timezone.now()}
    )
    if created and send:
        transaction.on_commit(lambda: _send(job.id))
    return job


def _claim(job_id: int, token: str, now: datetime) -> bool:
    due = Q(run_after__isnull=True) | Q(run_after__lte=now)
    free = Q(state=JobState.QUEUED) | Q(state=JobState.RUNNING, lease_until__lt=now)
    return bool(
        Job.objects.filter(due & free, pk=job_id).update(
            state=JobState.RUNNING, lease_token=token, lease_until=now + LEASE
        )
    )


def _checkpoint(job_id: int, token: str, payload: dict):
    """``checkpoint(**fields)`` for a handler: saves fields into the payload while the lease is ours."""

    def checkpoint(**fields) -> None:
        # Into the stored payload, not the copy read at the start: a forget may have
        # taken from it since (memory.services.removal) what must not be written back.
        payload.update(fields)
        mine = Job.objects.filter(pk=job_id, lease_token=token)
        with transaction.atomic():
            stored = mine.values_list("payload", flat=True).first()
            saved = stored is not None and mine.update(
                payload={**stored, **fields}, lease_until=timezone.now() + LEASE
            )
        if not saved:
            raise JobLeaseLost(f"job {job_id}: lease lost")

    return checkpoint


def _mark_done(job_id: int, token: str) -> bool:
    # The payload may quote the exchange (tool results): not kept once done, so a
    # later forget has nothing to chase here.
    return bool(
        Job.objects.filter(pk=job_id, lease_token=token).update(
            state=JobState.DONE,
            finished_at=timezone.now(),
            lease_token="",
            lease_until=None,
            error="",
            payload={},
        )
    )


def _wait(mine, exc: Exception, delay: timedelta) -> None:
    """Back in the queue, due in ``delay``, its attempts untouched; the error says why."""
    mine.update(
        state=JobState.QUEUED,
        lease_token="",
        lease_until=None,
        queued_at=None,
        run_after=timezone.now() + delay,
        error=str(exc)[:ERROR_MAX_CHARS],
    )


def job_run(job_id: int) -> str:
    """Run one job if it is ours to run. Returns what happened (for logs and tests)."""
    from agent.exceptions import LlmNotConfigured, LlmUnavailable

    token = uuid.uuid4().hex
    now = timezone.now()
    if not _claim(job_id, token, now):
        return "skipped"
    job = Job.objects.get(pk=job_id)
    mine = Job.objects.filter(pk=job_id, lease_token=token)
    payload = dict(job.payload)
    try:
        _handler(job.kind)(payload, checkpoint=_checkpoint(job_id, token, payload))
    except JobLeaseLost:
        logger.info("job %s: lease lost while it ran; left to its new owner", job.key)
        return "lost"
    except LlmNotConfigured as exc:
        _wait(mine, exc, WAIT_FOR_CONFIGURATION)
        return "waiting"
    except JobWait as exc:
        _wait(mine, exc, max(exc.until - timezone.now(), timedelta(0)))
        if exc.held is not None and not exc.held():
            # Released between the handler's check and the write above (QA 5: parked until
            # the purge date, its exchange given back): due now.
            jobs_send([job.key])
        return "waiting"
    except (StoreUnavailable, LlmUnavailable) as exc:
        # A store or the LLM that is down delays the job, never fails it: it waits longer
        # as the outage lasts, its attempts untouched (they count the job's own failures).
        waited = (timezone.now() - job.created_at).total_seconds()
        delay = min(BACKOFF_CAP_S, max(BACKOFF_BASE_S, waited / 4))
        logger.warning("job %s (%s) waits %.0f s: %s", job.key, job.kind, delay, exc)
        _wait(mine, exc, timedelta(seconds=delay * random.uniform(0.8, 1.2)))
        return "waiting"
    except Exception as exc:
        attempts = job.attempts + 1
        failed = attempts >= MAX_ATTEMPTS
        logger.warning("job %s (%s) failed, attempt %d: %s", job.key, job.kind, attempts, exc)
        delay = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempts - 1)) * random.uniform(0.8, 1.2)
        mine.update(
            state=JobState.FAILED if failed else JobState.QUEUED,
            attempts=attempts,
            error=f"{type(exc).__name__}: {exc}"[:ERROR_MAX_CHARS],
            lease_token="",
            lease_until=None,
            queued_at=None,
            run_after=None if failed else timezone.now() + timedelta(seconds=delay),
        )
        return "failed" if failed else "retry"
    return "done" if _mark_done(job_id, token) else "lost"


def jobs_sweep(*, now: datetime | None = None, limit: int = SWEEP_BATCH) -> int:
    """Re-send due queued jobs not queued recently, and jobs whose worker died."""
    now = now or timezone.now()
    expired = Job.objects.filter(state=JobState.RUNNING, lease_until__lt=now)
    expired.update(state=JobState.QUEUED, lease_token="", lease_until=None, queued_at=None)
    due = Job.objects.filter(
        Q(state=JobState.QUEUED)
        & (Q(run_after__isnull=True) | Q(run_after__lte=now))
        & (Q(queued_at__isnull=True) | Q(queued_at__lte=now - QUEUE_GRACE))
    ).order_by("id")
    ids = list(due.values_list("id", flat=True)[:limit])
    Job.objects.filter(pk__in=ids).update(queued_at=now)
    for job_id in ids:
        _send(job_id)
    return len(ids)


def jobs_retry_failed() -> int:
    """Give the failed jobs a new round of attempts (``memory_doctor --fix``, once the cause
    is fixed: an LLM account refilled, a bug repaired); the sweep sends them."""
    return Job.objects.filter(state=JobState.FAILED).update(
        state=JobState.QUEUED, attempts=0, run_after=None, queued_at=None, finished_at=None
    )


def jobs_send(keys: list[str]) -> int:
    """Make these queued jobs due now and send them (after the caller's commit)."""
    jobs = Job.objects.filter(key__in=keys, state=JobState.QUEUED)
    ids = list(jobs.values_list("id", flat=True))
    jobs.update(run_after=None, queued_at=timezone.now())
    for job_id in ids:
        transaction.on_commit(lambda job_id=job_id: _send(job_id))
    return len(ids)


def jobs_restart_recover() -> int:
    """At the start of the embedded runtime: the previous process's claims and queue are void."""
    return Job.objects.filter(state__in=(JobState.QUEUED, JobState.RUNNING)).update(
        state=JobState.QUEUED, lease_token="", lease_until=None, queued_at=None
    )
