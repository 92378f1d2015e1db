"""A channel of « . » or « .. » (QA): HTTP clients and browsers remove such a path segment,
so /api/v1/memory/channels/.. reached /api/v1/memory/ and an observed room under it could
neither be read nor released. The channels' one rule refuses them, in French, and says
that « . » is a letter a channel may hold."""

from __future__ import annotations

import html as html_lib

import pytest

from memory.models import ChannelSettings, Message
from memory.models.rules import BAD_CHANNEL, channel_well_formed
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("channel", [".", ".."])
def test_the_rule_refuses_a_dot_segment(channel):
    assert not channel_well_formed(channel)


@pytest.mark.parametrize("channel", ["...", "a.b", ".salon", "v1.2"])
def test_a_channel_with_dots_and_more_is_still_one(channel):
    assert channel_well_formed(channel)


def test_the_message_names_every_mark_a_channel_may_hold():
    assert "." in BAD_CHANNEL.split("(")[1].split(")")[0]


@pytest.mark.parametrize("channel", [".", ".."])
def test_recording_a_message_there_is_a_french_400(owner_api, channel):
    response = owner_api.post(
        "/api/v1/memory/messages",
        {"channel": channel, "role": "user", "content": "Je pars à Lisbonne demain"},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"]["channel"] == [BAD_CHANNEL]
    assert not Message.objects.exists()


@pytest.mark.parametrize("channel", [".", ".."])
def test_observing_such_a_room_on_the_page_is_a_422(staff_client, channel):
    response = staff_client.post("/memory/rooms/observe/", {"channel": channel}, **HTMX)
    assert response.status_code == 422
    assert BAD_CHANNEL in html_lib.unescape(response.content.decode())
    assert not ChannelSettings.objects.filter(channel=channel).exists()
