"""POST /api/v1/agent/chat reads only what it knows: an unknown field or a number where a
text is expected is a 400, and nothing is recorded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.api.serializers import ChatInputSerializer
from memory.api.fields import STRING_REQUIRED_MESSAGE
from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.models import Message
from memory.models.rules import BAD_CHANNEL, CHANNEL_MAX, channel_well_formed

pytestmark = pytest.mark.django_db

PATHS = ["/api/v1/agent/chat", "/api/v1/agent/chat/stream"]


def _post(client, path, body):
    return client.post(path, body, content_type="application/json")


@pytest.mark.parametrize("path", PATHS)
def test_an_unknown_field_is_refused_before_the_message_is_recorded(staff_client, path):
    body = {"message": "bonjour", "channel": "mission_control", "zz": 1}

    response = _post(staff_client, path, body)

    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {"zz": [UNKNOWN_FIELD_MESSAGE]}
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": 5, "channel": "mission_control"}, "message"),
        ({"message": "bonjour", "channel": 5}, "channel"),
        ({"message": "bonjour", "channel": "mission_control", "author": 5}, "author"),
    ],
)
def test_a_number_where_a_text_is_expected_is_refused(staff_client, body, field):
    response = _post(staff_client, PATHS[0], body)

    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {field: [STRING_REQUIRED_MESSAGE]}
    assert not Message.objects.exists()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=70))
def test_the_chat_takes_a_channel_by_the_channels_one_rule(channel):
    """The chat API's channel and a message's are the same rule (it had a regex of its own,
    beside rules.channel_well_formed): what one takes, the other takes (DRF trims the ends)."""
    serializer = ChatInputSerializer(data={"channel": channel, "message": "Bonjour"})

    valid = serializer.is_valid()

    assert valid == channel_well_formed(channel.strip()), (channel, serializer.errors)
    if not valid and channel.strip() and len(channel.strip()) <= CHANNEL_MAX:
        assert BAD_CHANNEL in serializer.errors["channel"], serializer.errors
