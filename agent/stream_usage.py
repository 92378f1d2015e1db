"""The usage of a stream that did not finish (agent.client.llm_stream records it here)."""

from __future__ import annotations

import json
import logging
from typing import Any

logger = logging.getLogger(__name__)


def cut_usage_record(
    stream: Any,
    request: dict,
    purpose: str,
    channel: str,
    retrieval_tokens: int,
    retrieval_id: int | None,
) -> bool:
    """Record the usage of a stream that did not finish, if its message_start arrived
    (else nothing was consumed); True if it had. Output tokens: the larger of what the
    events said and an estimate of the text and tool input received."""
    from agent.usage import usage_record
    from memory.services.formatting import estimate_tokens

    try:
        snapshot = stream.current_message_snapshot  # asserts its message_start came
    except (AttributeError, AssertionError):
        snapshot = None
    if snapshot is None:
        return False
    received = "".join(
        getattr(block, "text", "") or json.dumps(getattr(block, "input", ""), ensure_ascii=False)
        for block in snapshot.content
    )
    reported = snapshot.usage.output_tokens if snapshot.usage else 0
    try:
        usage_record(
            model=snapshot.model or request["model"],
            purpose=purpose,
            channel=channel,
            input_tokens=snapshot.usage.input_tokens if snapshot.usage else 0,
            output_tokens=max(reported or 0, estimate_tokens(received)),
            retrieval_tokens=retrieval_tokens,
            retrieval_id=retrieval_id,
            estimated=True,
        )
    except Exception:  # the answer's own error (or the reader's exit) matters more
        logger.exception("usage of an interrupted stream (%s) not recorded", purpose)
    return True
