"""An export re-imported into an empty memory loses which rooms are observed.

The export carries the observed rooms' messages (``observed: true``) but not the rooms'
setting (ChannelSettings, ``PUT /channels/<channel> {"observed": true}``): imported into an
empty memory, the messages come back as live extracts of a room that is no longer observed,
so the agent answers there again and ``GET /channels`` / ``/digest`` list no observed room.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import ChannelSettings, Message
from memory.services.channels import channel_is_observed
from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401

pytestmark = pytest.mark.django_db


def test_an_observed_room_stays_observed_through_export_and_import(tmp_path, owner_api, agent_api):
    assert (
        owner_api.put(
            "/api/v1/memory/channels/salon-famille", {"observed": True}, format="json"
        ).status_code
        == 200
    )
    assert agent_api.post(
        "/api/v1/memory/messages",
        {"channel": "salon-famille", "author": "Paul", "content": "Repas de Noël chez mamie"},
        format="json",
    ).status_code in (200, 201)
    assert channel_is_observed("salon-famille")
    path = tmp_path / "memoire.jsonl"
    call_command("memory_export", str(path), stdout=StringIO())

    # The same file into an empty memory.
    Message.all_objects.all().delete()
    ChannelSettings.objects.all().delete()
    call_command("memory_import", str(path), stdout=StringIO())

    assert Message.all_objects.get().observed is True  # the message came back as live...
    assert channel_is_observed("salon-famille")  # ...but its room is no longer observed
