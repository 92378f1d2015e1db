"""Celery tasks of the memory: thin interfaces over memory.services.

Tasks take row ids, return quietly when the row is gone, are acked late (a
worker killed mid-task leaves the message for another), and retry only
transient store errors, with exponential backoff and jitter, up to a cap.
"""

from __future__ import annotations

from celery import shared_task

from memory.exceptions import StoreUnavailable

RETRY_OPTIONS = {
    "acks_late": True,
    "autoretry_for": (StoreUnavailable,),
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
}


@shared_task(name="memory.message_index", **RETRY_OPTIONS)
def message_index_task(message_id: int) -> dict:
    from memory.services.indexing import KIND_MESSAGE, index_row

    return vars(index_row(KIND_MESSAGE, message_id))


@shared_task(name="memory.fact_index", **RETRY_OPTIONS)
def fact_index_task(fact_id: int) -> dict:
    from memory.services.indexing import KIND_FACT, index_row

    return vars(index_row(KIND_FACT, fact_id))


@shared_task(name="memory.summary_index", **RETRY_OPTIONS)
def summary_index_task(summary_id: int) -> dict:
    from memory.services.indexing import KIND_SUMMARY, index_row

    return vars(index_row(KIND_SUMMARY, summary_id))


@shared_task(name="memory.pending_sweep", acks_late=True)
def pending_sweep_task() -> dict:
    from memory.services.indexing import pending_sweep

    return pending_sweep()


@shared_task(name="memory.expired_purge", acks_late=True)
def expired_purge_task() -> int:
    from memory.services.expiry import expired_purge

    return expired_purge()
