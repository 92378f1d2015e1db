"""GET/PUT /api/memory/channels/<channel>, the paged list, and /api/memory/digest."""

from __future__ import annotations

import pytest

from makilab.exception_handlers import VALIDATION_MESSAGE
from memory.api.serializers import READ_ONLY_MESSAGE, UNKNOWN_FIELD_MESSAGE
from memory.models import ChannelSettings, Job, Message

pytestmark = pytest.mark.django_db


def test_the_owner_observes_a_room_and_the_next_message_goes_live(owner_api):
    assert owner_api.get("/api/v1/memory/channels/lobby").json() == {
        "channel": "lobby",
        "observed": False,
        "updated_at": None,
    }

    response = owner_api.put("/api/v1/memory/channels/lobby", {"observed": True}, format="json")

    assert response.status_code == 200 and response.json()["observed"] is True
    listed = owner_api.get("/api/memory/channels").json()
    assert listed["count"] == 1 and listed["results"][0]["channel"] == "lobby"
    posted = owner_api.post(
        "/api/memory/messages", {"channel": "lobby", "content": "Je pars demain"}, format="json"
    )
    assert posted.status_code == 201, posted.content
    assert Message.objects.get(channel="lobby").observed is True


def test_the_agents_token_reads_but_cannot_observe_nor_force_a_digest(agent_api):
    assert agent_api.get("/api/memory/channels/lobby").status_code == 200
    response = agent_api.put("/api/memory/channels/lobby", {"observed": True}, format="json")
    assert response.status_code == 403
    assert agent_api.post("/api/memory/digest").status_code == 403
    assert not ChannelSettings.objects.exists() and not Job.objects.exists()


def test_a_bad_channel_or_body_is_a_french_400(owner_api):
    response = owner_api.put("/api/memory/channels/a%20b", {"observed": True}, format="json")
    assert response.status_code == 400
    assert "Le canal doit être un nom court" in response.content.decode()
    response = owner_api.put("/api/memory/channels/lobby", {}, format="json")
    assert response.status_code == 400


def test_put_refuses_a_field_it_does_not_write_as_every_other_body_does(owner_api):
    """A typo ("observd") next to a valid field was silently dropped: the room stayed
    as it was while the answer said 200."""
    response = owner_api.put(
        "/api/v1/memory/channels/lobby",
        {"observed": False, "observd": True, "channel": "autre"},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert response.json() == {
        "message": VALIDATION_MESSAGE,
        "extra": {"fields": {"channel": [READ_ONLY_MESSAGE], "observd": [UNKNOWN_FIELD_MESSAGE]}},
    }
    assert not ChannelSettings.objects.exists()


def test_forcing_a_digest_queues_one_durable_job_and_reports_the_state(owner_api):
    ChannelSettings.objects.create(channel="lobby", observed=True)
    Message.objects.create(channel="lobby", role="user", content="Salut Paul", observed=True)

    first = owner_api.post("/api/v1/memory/digest")
    second = owner_api.post("/api/memory/digest")

    assert first.status_code == second.status_code == 202
    body = second.json()
    assert body["observed"] == ["lobby"] and body["live_count"] == 1 and body["pending"] is True
    assert body["last"] is None and body["next_at"]
    assert Job.objects.filter(kind="digest").count() == 1  # the waiting one is kept
    assert owner_api.get("/api/memory/digest").json()["pending"] is True


def test_in_an_observed_room_a_recorded_assistant_message_is_no_exchange(owner_api):
    ChannelSettings.objects.create(channel="lobby", observed=True)
    owner_api.post(
        "/api/memory/messages",
        {
            "messages": [
                {"channel": "lobby", "content": "Qui vient samedi ?"},
                {"channel": "lobby", "role": "assistant", "content": "Le bot de Paul : moi"},
            ]
        },
        format="json",
    )

    question, other = Message.objects.filter(channel="lobby").order_by("id")
    assert other.reply_to_id is None and other.observed and question.observed
    assert not Job.objects.filter(kind="extract").exists()  # the digest reads them
