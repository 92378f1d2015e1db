"""QA: a compaction summary cut by max_tokens is accepted, and its messages leave the history.

channel_compact caps the summary at COMPACTION_MAX_TOKENS (1500) for up to 200 messages
(80,000 characters of transcript). When the LLM hits the cap, the Messages API returns
a complete message with ``stop_reason: "max_tokens"`` and a summary cut mid-sentence;
agent.compaction never looks at the stop reason: the cut text becomes the channel's
Summary and every message of the transcript is marked compacted — the part the summary
never reached leaves the history the LLM gets, replaced by nothing. Expected: an answer
cut by the output cap is not taken as the summary (nothing compacted, the job retried or
failed visibly), as an empty answer is not.
"""

from __future__ import annotations

import contextlib

import pytest

from agent.compaction import channel_compact
from memory.models import Message, Summary
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):  # noqa: F811
    settings.AGENT_COMPACTION_THRESHOLD = 10
    settings.AGENT_COMPACTION_KEEP_LAST = 4
    settings.AGENT_COALESCE_SECONDS = 0
    settings.ANTHROPIC_MAX_RETRIES = 0
    return fake_anthropic


def test_a_summary_cut_by_the_output_cap_compacts_nothing(world):
    for i in range(13):
        role = "user" if i % 2 == 0 else "assistant"
        message_save(channel="whatsapp", role=role, content=f"Message {i} : détail n° {i}")
    world.script(
        text_message(
            "Le propriétaire a d'abord parlé du détail 0, puis du", stop_reason="max_tokens"
        )
    )

    # Refusing the cut answer (an LlmError the job retries) is fine.
    with contextlib.suppress(Exception):
        channel_compact(channel="whatsapp")

    compacted = Message.objects.filter(channel="whatsapp", compacted=True).count()
    assert (Summary.objects.count(), compacted) == (0, 0), (
        f"summary {Summary.objects.values_list('content', flat=True).first()!r} "
        f"replaced {compacted} messages"
    )
