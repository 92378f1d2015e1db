"""Test data shared by the agent tests: a past exchange, saved and indexed."""

from __future__ import annotations

from memory.services.indexing import KIND_MESSAGE, index_rows
from memory.services.messages import message_save


def past_exchange(channel: str, user: str, reply: str):
    """A user message and its reply on ``channel``, indexed; returns the user message."""
    question = message_save(channel=channel, role="user", content=user)
    message_save(channel=channel, role="assistant", content=reply, reply_to_id=question.id)
    index_rows(KIND_MESSAGE, [question.id])
    return question
