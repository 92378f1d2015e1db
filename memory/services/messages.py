"""Writing messages: save one, and have its exchange indexed once committed (the
outside agents' recording, a batch at a time: memory.services.messages_record)."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import (
    IndexState,
    Message,
    MessageRole,
    MessageSource,
)
from memory.models.rules import BAD_CHANNEL, channel_well_formed
from memory.services.indexing import (
    INDEXED_ROLES,
    KIND_MESSAGE,
    exchange_root_id,
    index_enqueue,
    row_created_queued,
    row_created_send,
)

EMPTY_MESSAGE = "Le message est vide."
# The longest message an outside agent records (the API).
CONTENT_MAX_CHARS = 50_000
# The longest message any writer of the memory stores: the agent's own replies are as long
# as ANTHROPIC_MAX_TOKENS lets them be (at most 128,000 tokens, about 4 characters each).
# What an import takes: this memory's export always imports (review).
STORED_MAX_CHARS = 1_000_000
CONTENT_TOO_LONG = "un message est limité à {limit} caractères (celui-ci en a {length})."
QUESTION_ERASED = (
    "Le message auquel répond cette réponse a été effacé de cette mémoire : "
    "la réponse n'est pas enregistrée."
)


class QuestionErased(MemoryServiceError):
    """The message a reply answers was erased for good: the reply, part of its exchange,
    is not kept."""

    def __init__(self) -> None:
        super().__init__(QUESTION_ERASED)


def channel_validate(channel: str) -> str:
    channel = (channel or "").strip()
    if not channel_well_formed(channel):
        raise ValidationError({"channel": BAD_CHANNEL})
    return channel


@transaction.atomic
def message_save(
    *,
    channel: str,
    role: str,
    content: str,
    author: str = "",
    source: str = MessageSource.USER,
    reply_to_id: int | None = None,
    created_at: datetime | None = None,
) -> Message:
    """Save a message of a channel; its exchange is (re)indexed after commit.

    A reply belongs to the exchange of the message it answers (``reply_to_id``): to its
    forget if one took that message, out of memory with it if it asked to forget;
    QuestionErased if it was erased for good (the reply is not kept).
    """
    if not content or not content.strip():
        raise ValidationError({"content": EMPTY_MESSAGE})
    message = Message(
        channel=channel_validate(channel),
        role=MessageRole(role),
        content=content,
        author=author,
        source=MessageSource(source),
        reply_to_id=reply_to_id,
        created_at=created_at or timezone.now(),
    )
    if reply_to_id is not None:
        _reply_joins_its_exchange(message)
    taken = message.forgetting_id is not None or message.memory_excluded
    if message.role not in INDEXED_ROLES:
        message.index_state = IndexState.SKIPPED
    elif reply_to_id is None:
        from memory.services.channels import channel_is_observed

        # A room the agent observes: one live point per message, no exchange.
        message.observed = channel_is_observed(message.channel) or None
    new_root = message.role in INDEXED_ROLES and reply_to_id is None
    if new_root:
        row_created_queued(message)
    message.full_clean()
    message.save()
    if new_root:
        row_created_send(KIND_MESSAGE, message.pk)
    elif message.role in INDEXED_ROLES and not taken:
        index_enqueue(KIND_MESSAGE, exchange_root_id(message))
    return message


def _reply_joins_its_exchange(reply: Message) -> None:
    """Give ``reply`` the state of the message it answers (see message_save).

    Read in the reply's transaction, which holds SQLite's write lock from its start
    (IMMEDIATE): no forget or erasure commits between this read and the save. A forget
    that committed before took the question (QA: the reply, saved a moment later, stayed
    live and named the topic); one that commits after takes the reply with its exchange
    (forgetting.forgetting_take).
    """
    question = (
        Message.all_objects.filter(pk=reply.reply_to_id)
        .values("forgetting_id", "memory_excluded")
        .first()
    )
    if question is None:
        raise QuestionErased()
    reply.forgetting_id = question["forgetting_id"]
    reply.memory_excluded = question["memory_excluded"]
