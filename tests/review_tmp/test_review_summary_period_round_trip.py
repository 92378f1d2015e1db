"""Review: a summary the compaction wrote is refused by the import of this memory's own
export (Summary.clean, commit 5739d25).

The compaction takes a channel's oldest messages by id and dates its summary from the
first to the last of them (agent.compaction.channel_compact: period_start =
messages[0].created_at, period_end = messages[-1].created_at). Messages are not stored in
the order of their dates: the API takes a message's « timestamp » (a message recorded
late), and an import adds an older export's messages after the live ones. The summary's
period then ends before it starts, and its export no longer imports: the round trip of
this very memory fails with « la fin de la période précède son début ».
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

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
    return fake_anthropic


def test_an_export_holding_a_compaction_of_messages_recorded_late_imports_back(world, tmp_path):
    now = timezone.now()
    message_save(channel="whatsapp", role="user", content="Message du jour")
    # Recorded after it, dated before it (the API's « timestamp », or an older import).
    for i in range(12):
        message_save(
            channel="whatsapp",
            role="user" if i % 2 == 0 else "assistant",
            content=f"Message ancien {i}",
            created_at=now - timedelta(days=2) + timedelta(minutes=i),
        )
    world.script(text_message("Le propriétaire a parlé de ses anciens messages."))
    summary = channel_compact(channel="whatsapp")
    assert summary is not None

    path = tmp_path / "export.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())
    Summary.all_objects.all().delete()
    Message.all_objects.all().delete()
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())

    assert Summary.all_objects.count() == 1
