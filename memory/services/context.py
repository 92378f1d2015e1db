"""The pre-hook as a service: the memory context of an outside agent's incoming message.

Exactly our agent's auto-retrieval (memory.services.retrieval.auto_retrieve),
logged in memory_retrievals like its calls; optionally the message is first
recorded on its channel through the same path as POST /api/memory/messages,
and then counts as already seen (it is never its own context).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.services.messages_record import MessageDraft, messages_record
from memory.services.retrieval import RetrievalResult, auto_retrieve


@dataclass
class MessageContext:
    retrieval: RetrievalResult
    # The recorded message (with ``record``), else empty.
    message_ids: list[int] = field(default_factory=list)
    replayed: bool = False


def message_context(
    *,
    message: str,
    channel: str,
    record: bool = False,
    author: str = "",
    idempotency_key: str = "",
) -> MessageContext:
    """The context block, memories and notes to inject for ``message`` on ``channel``.

    When auto-retrieval is off in the settings, an empty, disabled result
    (nothing logged).
    """
    recording = None
    if record:
        recording = messages_record(
            drafts=[MessageDraft(channel=channel, content=message, author=author)],
            idempotency_key=idempotency_key,
        )
    message_ids = recording.message_ids if recording else []
    retrieval = auto_retrieve(message=message, channel=channel, message_ids=message_ids)
    if retrieval is None:
        retrieval = RetrievalResult(channel=channel, message=message, enabled=False)
    return MessageContext(
        retrieval=retrieval,
        message_ids=message_ids,
        replayed=bool(recording and recording.replayed),
    )
