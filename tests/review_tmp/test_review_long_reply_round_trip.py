"""Review (low, needs ANTHROPIC_MAX_TOKENS raised): the agent's own reply is stored at any
length (agent.loop saves the LLM's text as it is), and the import now refuses a message
over 50,000 characters (5e2090c). ANTHROPIC_MAX_TOKENS has no upper bound (settings:
env_int(..., minimum=1)); at 16,000 tokens and more a long answer (a story, a plan) passes
50,000 characters, and this memory's export then no longer imports.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from agent.loop import handle_message
from memory.models import Message
from tests.agent.conftest import world  # noqa: F401
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_agents_long_reply_comes_back_through_its_export(world, settings, tmp_path):  # noqa: F811
    settings.ANTHROPIC_MAX_TOKENS = 32_000
    long_reply = ("Il était une fois un vélo gris qui voulait voir la mer. " * 1_000).strip()
    world.script(text_message(long_reply))
    handle_message(channel="whatsapp", text="Raconte-moi une très longue histoire")
    assert Message.objects.filter(content=long_reply).exists()

    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Message.all_objects.all().delete()
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())

    assert Message.all_objects.filter(content=long_reply).exists()
