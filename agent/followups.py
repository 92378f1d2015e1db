"""What follows an exchange, whoever answered it: our agent loop or an outside agent.

One exchange is the user messages a reply answers (several when they were
coalesced), the reply, and the results of the tools run for it. After it, fact
extraction (from the user messages, the reply and the tool results) and, when
the channel is long, compaction are recorded as durable jobs
(memory.services.jobs). The agent loop (agent.loop) and the messages API
(memory.services.messages_record.messages_record) both call this one function.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import transaction

logger = logging.getLogger(__name__)


def exchange_followups_enqueue(
    *,
    channel: str,
    message_ids: Sequence[int],
    reply_id: int,
    tool_results: Sequence[str],
    extract: bool,
) -> None:
    """Fact extraction and, when the channel is long, compaction, as durable jobs.

    The jobs are rows written in the caller's transaction (a savepoint): a stop
    or a crash of the worker delays them, never drops them. Never raises: the
    exchange is already saved.
    """
    from agent.compaction import compaction_job_enqueue
    from agent.extraction_jobs import extraction_job_enqueue

    try:
        with transaction.atomic():
            if extract:
                extraction_job_enqueue(
                    message_ids=list(message_ids),
                    reply_id=reply_id,
                    channel=channel,
                    tool_results=list(tool_results),
                )
            compaction_job_enqueue(channel=channel)
    except Exception:
        logger.exception("could not record the follow-up jobs of %s", channel)
