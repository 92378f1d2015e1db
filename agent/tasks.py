"""Celery tasks of the agent: the post-response work, thin interfaces over services.

They take ids (the messages are re-read: an exchange forgotten meanwhile is not
extracted), are acked late, and retry only an LLM that is unavailable for now,
with exponential backoff and jitter, up to a cap. No key: they return at once.
"""

from __future__ import annotations

from celery import shared_task

from agent.exceptions import LlmNotConfigured, LlmUnavailable

RETRY_OPTIONS = {
    "acks_late": True,
    "autoretry_for": (LlmUnavailable,),
    "dont_autoretry_for": (LlmNotConfigured,),
    "retry_backoff": 30,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 3,
}


@shared_task(name="agent.extract_and_save_facts", **RETRY_OPTIONS)
def extract_and_save_facts(
    message_ids: list[int],
    reply_id: int | None,
    channel: str,
    tool_results: list[str] | None = None,
) -> dict:
    """Extract the durable facts of an exchange and store them through dedup."""
    from agent.extraction import exchange_facts_save

    report = exchange_facts_save(
        message_ids=message_ids,
        reply_id=reply_id,
        channel=channel,
        tool_results=tool_results or [],
    )
    return vars(report)


@shared_task(name="agent.channel_compact", **RETRY_OPTIONS)
def channel_compact_task(channel: str) -> int | None:
    """Compact the channel when it is over the threshold; the summary id or None."""
    from agent.compaction import channel_compact

    summary = channel_compact(channel=channel)
    return summary.id if summary else None
