"""QA: an LLM reply holding a NUL character breaks the turn: 400 on the API, 500 on /chat/.

The reply is saved through message_save, whose full_clean refuses a NUL (Django's
ProhibitNullCharactersValidator). agent.loop does not expect it: the ValidationError
leaves handle_message. ``POST /api/v1/agent/chat`` then answers **400** « Données
invalides. » with ``extra.fields.content`` — blaming the owner's request, valid, for a
field it does not have — and ``/chat/send/`` (htmx) answers a 500 page. The LLM call is
paid, the reply is lost, the owner is told nothing true. Reproduced on a running serve
with the fake Anthropic answering ``"Réponse avec nul \\u0000 dedans"``: 400 and 500,
twice each. Expected: the owner's message kept (it is), and either the reply stored
without the NUL or a French 502-style error naming the LLM's answer, as for an
unreadable answer.
"""

from __future__ import annotations

import pytest

from memory.models import Message
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings, tmp_path):  # noqa: F811
    settings.AGENT_COALESCE_SECONDS = 0
    settings.ANTHROPIC_MAX_RETRIES = 0
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return fake_anthropic


@pytest.fixture
def owner(staff_client):
    staff_client.raise_request_exception = False  # a 500 as a served request answers it
    return staff_client


def test_the_api_does_not_blame_the_request_for_the_llms_reply(world, owner):
    world.script(text_message("Réponse avec nul \x00 dedans"))

    response = owner.post(
        "/api/v1/agent/chat",
        {"channel": "mission_control", "message": "Bonjour"},
        content_type="application/json",
    )

    assert Message.objects.filter(role="user", content="Bonjour").exists()
    assert response.status_code not in (400, 500), response.content[:200]


def test_the_chat_panel_answers_no_500(world, owner):
    world.script(text_message("Réponse avec nul \x00 dedans"))

    response = owner.post("/chat/send/", {"message": "Bonjour"}, HTTP_HX_REQUEST="true")

    assert Message.objects.filter(role="user", content="Bonjour").exists()
    assert response.status_code != 500
