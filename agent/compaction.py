"""Compaction: a long channel's oldest messages become one summary.

When a channel has more uncompacted messages than AGENT_COMPACTION_THRESHOLD,
all but the last AGENT_COMPACTION_KEEP_LAST are summarised by the LLM into a
Summary that names its channel; those messages are marked compacted (they stay
in T1 and in the FTS index, but leave the history sent to the LLM, replaced by
the summary) and the summary is indexed in the "knowledge" collection.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agent.prompts import (
    COMPACTION_PROMPT,
    COMPACTION_SYSTEM_PROMPT,
    SUMMARY_HEADER,
    french_date,
)
from memory.models import Message, MessageRole, Summary
from memory.selectors import channel_conversation

logger = logging.getLogger(__name__)

# One compaction summarises at most this many messages (the next run takes the rest).
COMPACTION_MAX_MESSAGES = 200
COMPACTION_MESSAGE_CHARS = 2000
COMPACTION_TRANSCRIPT_CHARS = 80_000
COMPACTION_MAX_TOKENS = 1500

SPEAKERS = {
    MessageRole.USER: "Propriétaire",
    MessageRole.ASSISTANT: "Agent",
    MessageRole.SYSTEM: "Système",
    MessageRole.TOOL: "Outil",
}


def message_text_bounded(content: str) -> str:
    """A message as a transcript line holds it (compaction's, the digest's): on one line,
    cut at COMPACTION_MESSAGE_CHARS."""
    text = " ".join(content.split())
    if len(text) > COMPACTION_MESSAGE_CHARS:
        text = text[:COMPACTION_MESSAGE_CHARS] + "…"
    return text


def _uncompacted(channel: str):
    """The channel's conversation not compacted yet (selectors.channel_conversation: an
    observed room's messages are the digest's, never summarised as the owner's words)."""
    return channel_conversation(channel=channel).filter(compacted=False)


def compaction_needed(*, channel: str) -> bool:
    count = _uncompacted(channel).count()
    return count > settings.AGENT_COMPACTION_THRESHOLD


def _transcript(messages: list[Message]) -> str:
    lines: list[str] = []
    total = 0
    for message in messages:
        when = timezone.localtime(message.created_at).strftime("%d/%m/%Y %H:%M")
        content = message_text_bounded(message.content)
        line = f"[{when}] {SPEAKERS.get(message.role, message.role)} : {content}"
        total += len(line)
        if total > COMPACTION_TRANSCRIPT_CHARS:
            break
        lines.append(line)
    return "\n".join(lines)


def channel_compact(*, channel: str) -> Summary | None:
    """Summarise the channel's old messages when over the threshold; None when not needed.

    The LLM is called outside any transaction. Raises the LLM's errors
    (LlmUnavailable is transient: the task retries).
    """
    from agent.client import llm_available, llm_message
    from agent.llm_answers import answer_complete, message_text
    from memory.services.indexing import KIND_SUMMARY, index_enqueue

    if not llm_available():
        return None
    ids = list(_uncompacted(channel).order_by("id").values_list("id", flat=True))
    if len(ids) <= settings.AGENT_COMPACTION_THRESHOLD:
        return None
    keep = settings.AGENT_COMPACTION_KEEP_LAST
    old_ids = ids[: len(ids) - keep] if keep else ids
    old_ids = old_ids[:COMPACTION_MAX_MESSAGES]
    if not old_ids:
        return None
    messages = list(Message.objects.filter(pk__in=old_ids).order_by("id"))
    # The transcript may have been cut: only what the LLM saw gets compacted.
    transcript = _transcript(messages)
    messages = messages[: transcript.count("\n") + 1]
    # By date, not by id: a message recorded late (the API's timestamp, an import) is older.
    start = min(m.created_at for m in messages)
    end = max(m.created_at for m in messages)
    answer = llm_message(
        system=COMPACTION_SYSTEM_PROMPT,
        messages=[
            {
                "role": "user",
                "content": COMPACTION_PROMPT.format(
                    channel=channel,
                    start=french_date(start),
                    end=french_date(end),
                    count=len(messages),
                    transcript=transcript,
                ),
            }
        ],
        purpose="compaction",
        channel=channel,
        max_tokens=COMPACTION_MAX_TOKENS,
    )
    text = message_text(answer_complete(answer, purpose="compaction"))
    if not text:
        logger.warning("compaction of %s: the LLM gave an empty summary", channel)
        return None
    header = SUMMARY_HEADER.format(
        channel=channel, start=french_date(start), end=french_date(end), count=len(messages)
    )
    compacted_ids = [m.id for m in messages]
    with transaction.atomic():
        # Another worker may have compacted (some of) them while the LLM wrote.
        taken = Message.objects.filter(pk__in=compacted_ids, compacted=True).exists()
        present = Message.objects.filter(pk__in=compacted_ids).count()
        if taken or present != len(compacted_ids):
            # Nothing is written from a transcript that read a message gone since. The
            # forget that took it gives the channel a new job key, so the next reply
            # over the threshold compacts what remains (compaction_job_enqueue).
            logger.info("compaction of %s skipped: its messages changed meanwhile", channel)
            return None
        summary = Summary.objects.create(
            channel=channel,
            content=f"{header}\n{text}",
            message_count=len(compacted_ids),
            period_start=start,
            period_end=end,
        )
        Message.objects.filter(pk__in=compacted_ids).update(compacted=True)
        index_enqueue(KIND_SUMMARY, summary.id)
    logger.info(
        "compacted %d messages of %s into summary %s", len(compacted_ids), channel, summary.id
    )
    return summary


def compaction_job_enqueue(*, channel: str):
    """Record the channel's compaction job when it is over the threshold; None when not needed.

    One job per state of the channel: its oldest uncompacted message, how many
    thresholds' worth of messages wait, and the last forget. The replies that
    arrive while a job waits add none (a queued job reads the channel when it
    runs); a compaction that took nothing is tried again once the channel has
    grown by another threshold. A forget since the last job makes a new state: a
    compaction cut short by a forget (its messages changed while the LLM wrote)
    wrote nothing, and the channel, back over the threshold with the same oldest
    message and step, must not find that attempt's key used up.
    """
    from memory.models import Forgetting, Job, JobKind, JobState
    from memory.services.jobs import job_enqueue

    pending = _uncompacted(channel)
    count = pending.count()
    if count <= settings.AGENT_COMPACTION_THRESHOLD:
        return None
    waiting = (
        Job.objects.filter(kind=JobKind.COMPACT, state=JobState.QUEUED, payload__channel=channel)
        .order_by("id")
        .first()
    )
    if waiting is not None:
        return waiting
    oldest = pending.order_by("id").values_list("id", flat=True).first()
    step = count // settings.AGENT_COMPACTION_THRESHOLD
    # The newest forget, of any channel: its id only grows (a forget undone or purged
    # keeps its row), where a count of the channel's forgotten messages would fall back
    # to a key already used once the purge deletes them.
    forget = Forgetting.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return job_enqueue(
        kind=JobKind.COMPACT,
        key=f"compact:{channel}:{oldest}:{step}:{forget}",
        payload={"channel": channel},
    )


def job_compact(payload: dict, *, checkpoint=None) -> dict:
    """The durable job of a channel's compaction (memory.services.jobs).

    Running it twice is harmless: a second run finds the messages compacted.
    """
    from agent.client import LLM_NOT_CONFIGURED_MESSAGE, llm_available
    from agent.exceptions import LlmNotConfigured

    if not llm_available():
        raise LlmNotConfigured(LLM_NOT_CONFIGURED_MESSAGE)
    summary = channel_compact(channel=payload["channel"])
    return {"summary_id": summary.id if summary else None}
