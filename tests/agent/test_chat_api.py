"""POST /api/agent/chat: token and session auth, the answer's shape, 503 without an LLM."""

from __future__ import annotations

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


@pytest.fixture
def world(vector_store, local_embedder, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    return vector_store


@pytest.fixture
def agent_token(django_user_model):
    user = django_user_model.objects.create_user(username="makilab-agent", password="x" * 20)
    return Token.objects.create(user=user).key


def _post(client, body, **extra):
    return client.post(URL, body, content_type="application/json", **extra)


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
    chat = response.json()["paths"]["/api/agent/chat"]["post"]
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
