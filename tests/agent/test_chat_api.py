"""POST /api/agent/chat: token and session auth, the answer's shape, 503 without an LLM."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

from agent.client import LLM_NOT_CONFIGURED_MESSAGE
from memory.models import IndexState, Message
from memory.services.search import memory_search
from memory.stores.fts import fts_search
from tests.fakes.anthropic import overloaded, text_message, tool_use_message

pytestmark = pytest.mark.django_db

URL = "/api/agent/chat"
STREAM_URL = "/api/agent/chat/stream"


@pytest.fixture
def world(vector_store, local_embedder, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    return vector_store


@pytest.fixture
def agent_token(django_user_model):
    user = django_user_model.objects.create_user(username="makilab-agent", password="x" * 20)
    return Token.objects.create(user=user).key


def _post(client, body, path=URL, **extra):
    return client.post(path, body, content_type="application/json", **extra)


def test_the_route_is_mounted_under_api_agent():
    assert reverse("agent-api:chat") == URL


def test_without_a_key_it_answers_503_and_the_message_is_saved_indexed_and_searchable(
    world, staff_client, settings, eager_tasks, django_capture_on_commit_callbacks
):
    settings.ANTHROPIC_API_KEY = ""

    with django_capture_on_commit_callbacks(execute=True):
        response = _post(
            staff_client, {"channel": "mission_control", "message": "Le code du portail est 4821"}
        )

    assert response.status_code == 503
    assert response.json()["message"] == LLM_NOT_CONFIGURED_MESSAGE
    assert "Aucun LLM n'est configuré" in response.json()["message"]
    [saved] = Message.objects.all()
    assert response.json()["extra"]["message_ids"] == [saved.id]
    saved.refresh_from_db()
    assert saved.index_state == IndexState.INDEXED
    assert [hit.message_id for hit in fts_search("portail 4821")] == [saved.id]
    semantic = memory_search(query="le code du portail", mode="semantic", limit=3)
    assert semantic[0].id == str(saved.id)


def test_the_agent_client_talks_with_its_token(world, fake_anthropic, client, agent_token):
    fake_anthropic.script(
        tool_use_message(("memory__recent", {"limit": 3})),
        text_message("Rien de neuf.", input_tokens=500, output_tokens=20),
    )

    response = _post(
        client,
        {"channel": "whatsapp", "message": "Quoi de neuf ?", "author": "Mickael"},
        HTTP_AUTHORIZATION=f"Token {agent_token}",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reply"] == "Rien de neuf."
    assert body["channel"] == "whatsapp"
    assert body["coalesced"] is False
    assert body["tool_calls"] == [
        {"name": "memory__recent", "input": {"limit": 3}, "is_error": False}
    ]
    assert body["usage"]["calls"] == 2
    assert body["usage"]["model"] == "claude-sonnet-4-6"
    assert set(body["usage"]) >= {"input_tokens", "output_tokens", "retrieval_tokens", "cost_usd"}
    assert body["retrieval"] is None or set(body["retrieval"]) == {"id", "tokens_added", "memories"}
    question = Message.objects.get(pk=body["message_ids"][0])
    assert question.author == "Mickael"
    assert Message.objects.get(pk=body["reply_id"]).reply_to_id == question.id


def test_the_dashboard_talks_with_its_session(world, fake_anthropic, staff_client):
    fake_anthropic.script(text_message("Bonjour !"))
    response = _post(staff_client, {"channel": "mission_control", "message": "Bonjour"})
    assert response.status_code == 200
    assert response.json()["reply"] == "Bonjour !"
    assert Message.objects.get(pk=response.json()["message_ids"][0]).author == "owner"


def test_anonymous_callers_are_refused(client):
    response = _post(client, {"channel": "whatsapp", "message": "Bonjour"})
    assert response.status_code == 401
    assert Message.objects.count() == 0


def test_a_non_staff_session_is_refused(client, django_user_model):
    user = django_user_model.objects.create_user(username="visiteur", password="x" * 20)
    client.force_login(user)
    response = _post(client, {"channel": "whatsapp", "message": "Bonjour"})
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"channel": "whatsapp", "message": "   "}, "message"),
        ({"channel": "what's app", "message": "Bonjour"}, "channel"),
        ({"message": "Bonjour"}, "channel"),
        ({"channel": "whatsapp", "message": "Bonjour", "source": "admin"}, "source"),
    ],
)
def test_invalid_input_is_a_400_naming_the_field(staff_client, body, field):
    response = _post(staff_client, body)
    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"]
    assert Message.objects.count() == 0


def test_anthropic_down_is_a_503_and_the_message_stays_saved(
    world, fake_anthropic, staff_client, settings
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    fake_anthropic.script(overloaded())

    response = _post(staff_client, {"channel": "whatsapp", "message": "Tu es là ?"})

    assert response.status_code == 503
    assert "indisponible" in response.json()["message"]
    [saved] = Message.objects.all()
    assert response.json()["extra"]["message_ids"] == [saved.id]


def test_the_chat_route_is_in_the_openapi_schema(staff_client):
    response = staff_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    chat = response.json()["paths"]["/api/v1/agent/chat"]["post"]
    assert {"200", "400", "503"} <= set(chat["responses"])
    assert chat["operationId"] == "agent_chat"


def test_a_hanging_anthropic_is_a_503_after_the_timeout_and_the_message_stays_saved(
    world, fake_anthropic, staff_client, settings
):
    from tests.fakes.anthropic import hang

    settings.ANTHROPIC_TIMEOUT_S = 0.5
    settings.ANTHROPIC_MAX_RETRIES = 1
    fake_anthropic.script(hang(), hang())

    response = _post(staff_client, {"channel": "whatsapp", "message": "Allô ?"})

    assert response.status_code == 503
    assert "pas de réponse en 0.5 s" in response.json()["message"]
    assert len(fake_anthropic.message_requests) == 2
    assert Message.objects.filter(content="Allô ?").count() == 1


def _events(response) -> list[tuple[str, dict]]:
    """The server-sent events of a streamed response, decoded."""
    body = b"".join(response.streaming_content).decode()
    events = []
    for chunk in body.strip().split("\n\n"):
        name_line, data_line = chunk.split("\n")
        events.append(
            (name_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: ")))
        )
    return events


def test_the_stream_sends_the_text_as_it_comes_then_the_whole_answer(
    world, fake_anthropic, staff_client
):
    fake_anthropic.script(
        tool_use_message(("memory__recent", {"limit": 1}), text="Je regarde."),
        text_message("Voici ce que je sais de toi."),
    )

    response = _post(
        staff_client, {"channel": "mission_control", "message": "Que sais-tu ?"}, path=STREAM_URL
    )

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    events = _events(response)
    names = [name for name, _ in events]
    assert names[0] == "saved" and names[1] == "retrieval" and names[-1] == "done"
    assert "tool_call" in names
    deltas = [data["delta"] for name, data in events if name == "text"]
    assert len(deltas) > 2  # streamed in pieces by the fake, read through the SDK's stream
    assert "".join(deltas) == "Je regarde.Voici ce que je sais de toi."
    done = events[-1][1]
    assert done["reply"] == "Voici ce que je sais de toi."
    assert done["message_ids"] == events[0][1]["message_ids"]
    assert done["usage"]["calls"] == 2
    assert all(r.json.get("stream") is True for r in fake_anthropic.message_requests)
    assert Message.objects.get(pk=done["reply_id"]).content == done["reply"]


def test_the_stream_ends_with_an_error_event_when_anthropic_is_down(
    world, fake_anthropic, staff_client, settings
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    fake_anthropic.script(overloaded())

    response = _post(staff_client, {"channel": "whatsapp", "message": "Allô ?"}, path=STREAM_URL)

    events = _events(response)
    assert [name for name, _ in events] == ["saved", "retrieval", "error"]
    assert "indisponible" in events[-1][1]["message"]
    assert events[-1][1]["extra"]["message_ids"] == events[0][1]["message_ids"]
    assert Message.objects.filter(content="Allô ?").count() == 1


def test_the_stream_without_a_key_is_a_503_before_any_event(world, staff_client, settings):
    settings.ANTHROPIC_API_KEY = ""
    response = _post(
        staff_client,
        {"channel": "whatsapp", "message": "Allô ?"},
        path=STREAM_URL,
        HTTP_ACCEPT="text/event-stream",
    )
    assert response.status_code == 503
    assert response.content.decode().startswith("event: error\ndata: ")
    assert "Aucun LLM" in response.content.decode()
    assert Message.objects.filter(content="Allô ?").count() == 1


def test_in_an_observed_room_the_chat_keeps_the_message_and_does_not_answer(
    world, staff_client, settings
):
    """No LLM is needed there: the reply is empty, reply_id null, nothing was asked."""
    from memory.services.channels import channel_settings_set

    settings.ANTHROPIC_API_KEY = ""
    channel_settings_set(channel="lobby", observed=True)

    response = _post(staff_client, {"channel": "lobby", "message": "Je pars en Grèce demain"})
    streamed = _post(
        staff_client,
        {"channel": "lobby", "message": "Une semaine"},
        path=STREAM_URL,
        HTTP_ACCEPT="text/event-stream",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["reply"] == "" and body["reply_id"] is None and body["usage"]["calls"] == 0
    events = _events(streamed)
    assert [name for name, _ in events][-1] == "done"
    assert events[-1][1]["reply"] == ""
    assert Message.objects.filter(channel="lobby", observed=True).count() == 2
    assert not Message.objects.filter(channel="lobby", role="assistant").exists()
