"""The Celery app, configured from Django settings (CELERY_* names)."""

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "makilab.settings")

app = Celery("makilab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _connections_tidy(task=None, **kwargs) -> None:
    """Before and after a worker's task, what Django does around a request: close the
    thread's connections that are unusable (an error broke them), obsolete (older than
    CONN_MAX_AGE) or left out of autocommit; keep the others (CELERY_DB_REUSE_MAX: Celery
    no longer closes them all). A task run eagerly is inside its caller's transaction:
    left alone, as Celery's own fixup leaves it."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


# The periodic work. With a broker server, run `celery -A makilab beat` (or a
# worker with -B); in the embedded default, makilab.runtime sends the same
# tasks on the same schedule from inside the one process.
app.conf.beat_schedule = {
    "pending-sweep": {"task": "memory.pending_sweep", "schedule": 60.0},
    # Durable jobs (extraction, compaction) whose message was lost: a stop, a crash.
    "jobs-sweep": {"task": "memory.jobs_sweep", "schedule": 60.0},
    "expired-purge": {"task": "memory.expired_purge", "schedule": 600.0},
    # Forgets past their retention window are deleted for good.
    "forgettings-purge": {"task": "memory.forgettings_purge", "schedule": 3600.0},
    # The retrieval log and per-call LLM usage past their retention (daily totals stay).
    "logs-purge": {"task": "memory.logs_purge", "schedule": 86400.0},
    # SQLite's planner statistics follow the data as it grows (a sampled ANALYZE, ms).
    "planner-statistics": {"task": "memory.planner_statistics_refresh", "schedule": 3600.0},
    # The digest of the observed rooms at its fixed hours (MAKILAB_DIGEST_HOURS): the
    # check is cheap; it enqueues a durable job when the last fixed hour has no digest.
    "digest-schedule": {"task": "memory.digest_schedule", "schedule": 60.0},
    # The embedded Qdrant's search index over the points written since the last build,
    # once the store was idle for ten minutes (the build holds the process for seconds).
    "search-index": {"task": "memory.search_index_maintain", "schedule": 300.0},
}
