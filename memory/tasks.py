"""Celery tasks of the memory: thin interfaces over memory.services.

Tasks take row ids, return quietly when the row is gone, and are acked late
(a worker killed mid-task leaves the message for another). Indexing tasks do
not retry through Celery: a failure is recorded on the row (attempts, backoff,
error) by the indexing state machine, and the sweep re-sends it when due.
"""

from __future__ import annotations

from celery import shared_task

from memory.exceptions import StoreUnavailable

TASK_OPTIONS = {"acks_late": True, "bind": True, "max_retries": 3}


def _index(task, kind: str, row_ids: list[int]) -> dict:
    from memory.services.index_claims import LEASE
    from memory.services.indexing import batch_fill, index_rows

    try:
        report = index_rows(kind, batch_fill(kind, row_ids))
    except StoreUnavailable as exc:  # recorded on the rows; the sweep re-sends them when due
        return {"unavailable": str(exc)}
    if report.busy and task.request.retries < task.max_retries and not task.request.is_eager:
        # Another task holds a row's lease: it finishes the row, or (killed) its
        # lease runs out; come back then rather than waiting for the sweep.
        raise task.retry(countdown=LEASE.total_seconds() + 1)
    return vars(report)


@shared_task(name="memory.index_batch", **TASK_OPTIONS)
def index_batch_task(self, kind: str, row_ids: list[int]) -> dict:
    """Index these rows (one kind) and other due rows with them, in one embedding batch."""
    return _index(self, kind, list(row_ids))


# The one-row tasks of earlier versions: messages already queued still run.
@shared_task(name="memory.message_index", **TASK_OPTIONS)
def message_index_task(self, message_id: int) -> dict:
    return _index(self, "message", [message_id])


@shared_task(name="memory.fact_index", **TASK_OPTIONS)
def fact_index_task(self, fact_id: int) -> dict:
    return _index(self, "fact", [fact_id])


@shared_task(name="memory.summary_index", **TASK_OPTIONS)
def summary_index_task(self, summary_id: int) -> dict:
    return _index(self, "summary", [summary_id])


@shared_task(name="memory.pending_sweep", acks_late=True)
def pending_sweep_task(chained: bool = False) -> dict:
    from memory.services.indexing import pending_sweep

    return pending_sweep(chained=chained)


@shared_task(name="memory.expired_purge", acks_late=True)
def expired_purge_task() -> int:
    from memory.services.expiry import expired_purge

    return expired_purge()


@shared_task(name="memory.forgettings_purge", acks_late=True)
def forgettings_purge_task() -> int:
    from memory.services.forgetting import forgettings_purge

    return forgettings_purge()


@shared_task(name="memory.job_run", acks_late=True)
def job_run_task(job_id: int) -> str:
    from memory.services.jobs import job_run

    return job_run(job_id)


@shared_task(name="memory.jobs_sweep", acks_late=True)
def jobs_sweep_task() -> int:
    from memory.services.jobs import jobs_sweep

    return jobs_sweep()


@shared_task(name="memory.logs_purge", acks_late=True)
def logs_purge_task() -> dict:
    from memory.services.retention import logs_purge

    return logs_purge()


@shared_task(name="memory.planner_statistics_refresh", acks_late=True)
def planner_statistics_refresh_task() -> bool:
    from memory.stores.sqlite import planner_statistics_refresh

    return planner_statistics_refresh()


@shared_task(name="memory.digest_schedule", acks_late=True)
def digest_schedule_task() -> int | None:
    """Enqueue the digest of the last fixed hour if it has not run (the catch-up too)."""
    from memory.services.digest import digest_schedule_check

    job = digest_schedule_check()
    return job.id if job is not None else None


@shared_task(name="memory.search_index_maintain", acks_late=True)
def search_index_maintain_task() -> dict:
    """The embedded Qdrant's search index follows the collection (when searches pause);
    a Qdrant server's collections made before the int8 copy are given it."""
    from memory.services.maintenance import search_index_maintain

    return search_index_maintain()
