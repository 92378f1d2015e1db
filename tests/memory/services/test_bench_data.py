"""The benchmarks' seeded memory looks like the one the agent loop writes."""

import pytest

from memory.models import MessageRole
from memory.selectors import channel_history
from memory.services.bench_data import retrieval_seed

pytestmark = pytest.mark.django_db


def test_each_seeded_channel_has_the_history_the_agent_loop_sends(local_embedder, vector_store):
    """Exchanges are saved as the agent loop saves them, a user message then its reply:
    the pre-hook measured on them reads a full history (the LLM's last turns), not an
    empty one (every reply written after every user message left each channel's last
    rows all replies, dropped from the history's head one by one)."""
    retrieval_seed(120, templates=8)  # 84 exchanges: 28 per channel

    for channel in ("whatsapp", "mission_control"):
        history = channel_history(channel=channel, limit=20)
        assert len(history) == 20
        assert [m.role for m in history] == [MessageRole.USER, MessageRole.ASSISTANT] * 10
        for user, reply in zip(history[::2], history[1::2], strict=True):
            assert reply.reply_to_id == user.pk and user.channel == channel
