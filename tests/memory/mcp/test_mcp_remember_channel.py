"""MCP `remember` refuses a channel no message could have, in French (the channels' one
rule, rules.channel_well_formed: tests/memory/api/test_fact_channel_checked.py)."""

from __future__ import annotations

import pytest

from memory.models import Fact
from memory.services.messages import BAD_CHANNEL

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_under_a_bad_channel_says_why(mcp, vector_store, local_embedder, settings):
    settings.ANTHROPIC_API_KEY = ""
    answer = mcp("remember", {"key": "velo", "value": "un vélo bleu", "channel": "bad channel/.."})
    assert answer.is_error and BAD_CHANNEL in answer.content[0].text, answer.content[0].text
    assert not Fact.all_objects.exists()
    assert not mcp("remember", {"key": "velo", "value": "un vélo bleu", "channel": "sms"}).is_error
    assert Fact.objects.get(key="velo").channel == "sms"
