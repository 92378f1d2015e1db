"""Test data shared by the agent tests: a past exchange, saved and indexed."""

from __future__ import annotations

from memory.services.indexing import KIND_MESSAGE, index_rows
from tests.memory.world import exchange_save


def past_exchange(channel: str, user: str, reply: str):
    """A user message and its reply on ``channel``, indexed; returns the user message."""
    question, _ = exchange_save(channel, user, reply)
    index_rows(KIND_MESSAGE, [question.id])
    return question
