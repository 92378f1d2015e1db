"""Writing messages: save one, and have its exchange indexed once committed."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memory.models import IndexState, Message, MessageRole, MessageSource
from memory.services.indexing import INDEXED_ROLES, KIND_MESSAGE, exchange_root_id, index_enqueue

CHANNEL_MAX = 64
EMPTY_MESSAGE = "Le message est vide."
BAD_CHANNEL = "Le canal doit être un nom court (lettres, chiffres, - et _), 64 caractères au plus."


def channel_validate(channel: str) -> str:
    channel = (channel or "").strip()
    if (
        not channel
        or len(channel) > CHANNEL_MAX
        or not all(c.isalnum() or c in "-_." for c in channel)
    ):
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
    """Save a message of a channel; its exchange is (re)indexed after commit."""
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
    if message.role not in INDEXED_ROLES:
        message.index_state = IndexState.SKIPPED
    message.full_clean()
    message.save()
    if message.role in INDEXED_ROLES:
        index_enqueue(KIND_MESSAGE, exchange_root_id(message))
    return message
