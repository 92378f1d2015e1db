"""The agent's own long reply comes back through its export (review: the import refused a
message over the API's 50,000 characters, which an agent reply passes at 16,000 tokens and
more; it now takes what any writer stores, messages.STORED_MAX_CHARS)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from agent.loop import handle_message
from memory.models import Message
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db


def test_the_agents_long_reply_comes_back_through_its_export(world, settings, tmp_path):
    settings.ANTHROPIC_MAX_TOKENS = 32_000
    long_reply = ("Il était une fois un vélo gris qui voulait voir la mer. " * 1_000).strip()
    assert len(long_reply) > 50_000
    world.script(text_message(long_reply))
    handle_message(channel="whatsapp", text="Raconte-moi une très longue histoire")
    assert Message.objects.filter(content=long_reply).exists()

    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Message.all_objects.all().delete()
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())

    assert Message.all_objects.filter(content=long_reply).exists()
