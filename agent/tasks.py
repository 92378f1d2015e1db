"""Celery tasks of the agent, kept for messages sent before the durable jobs.

Fact extraction and compaction are durable jobs now (memory.services.jobs,
task ``memory.job_run``). A message of these older task names still waiting in
a broker becomes the same durable job (idempotent on its key: an exchange whose
job exists is not extracted twice) and runs it at once; the job's lease,
retries with backoff and sweep then apply.
"""

from __future__ import annotations

from celery import shared_task


@shared_task(name="agent.extract_and_save_facts", acks_late=True)
def extract_and_save_facts(
    message_ids: list[int],
    reply_id: int | None,
    channel: str,
    tool_results: list[str] | None = None,
) -> str:
    """The exchange's extraction job, recorded once and run; what happened ("done", …)."""
    from agent.extraction_jobs import extraction_job_enqueue
    from memory.services.jobs import job_run

    job = extraction_job_enqueue(
        message_ids=message_ids, reply_id=reply_id, channel=channel, tool_results=tool_results or []
    )
    return job_run(job.id)


@shared_task(name="agent.channel_compact", acks_late=True)
def channel_compact_task(channel: str) -> str | None:
    """The channel's compaction job when it is over the threshold, run; None when not needed."""
    from agent.compaction import compaction_job_enqueue
    from memory.services.jobs import job_run

    job = compaction_job_enqueue(channel=channel)
    return job_run(job.id) if job else None
