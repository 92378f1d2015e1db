"""QA: what the LLM writes is made storable; the owner is never blamed nor shown a 500.

- **A NUL in the reply** broke the turn: the reply is saved through message_save, whose
  full_clean refuses a NUL (Django's ProhibitNullCharactersValidator). ``POST
  /api/v1/agent/chat`` answered **400** « Données invalides. » with
  ``extra.fields.content``, blaming the owner's valid request for a field it does not
  have, and ``/chat/send/`` (htmx) answered a 500 page. The LLM call was paid, the reply
  lost, the owner told nothing true.
- **A lone UTF-16 surrogate** (``"\\ud800"``, valid JSON on the wire), in a tool_use
  input or in the text: the tool refused it as an internal error, then the next request
  of the answer re-sent that tool_use block and the SDK could not encode it to UTF-8
  (UnicodeEncodeError, not an AnthropicError, so agent.client did not translate it):
  a 500. A text answer with one failed the same way when the reply was saved.

Expected: the owner's message kept, and a reply (``llm_answers.text_storable``) or a
French error, never a 400 blaming the request nor a 500.
"""

from __future__ import annotations

import pytest

from memory.models import Message
from tests.fakes.anthropic import text_message, tool_use_message

pytestmark = pytest.mark.django_db

CHAT = "/api/v1/agent/chat"


@pytest.fixture
def llm(world, settings):
    settings.ANTHROPIC_MAX_RETRIES = 0
    return world


@pytest.fixture
def owner(staff_client):
    staff_client.raise_request_exception = False  # a 500 as a served request answers it
    return staff_client


def test_the_api_does_not_blame_the_request_for_a_nul_in_the_reply(llm, owner):
    llm.script(text_message("Réponse avec nul \x00 dedans"))

    response = owner.post(
        CHAT, {"channel": "mission_control", "message": "Bonjour"}, content_type="application/json"
    )

    assert Message.objects.filter(role="user", content="Bonjour").exists()
    assert response.status_code not in (400, 500), response.content[:200]


def test_the_chat_panel_answers_no_500_for_a_nul_in_the_reply(llm, owner):
    llm.script(text_message("Réponse avec nul \x00 dedans"))

    response = owner.post("/chat/send/", {"message": "Bonjour"}, HTTP_HX_REQUEST="true")

    assert Message.objects.filter(role="user", content="Bonjour").exists()
    assert response.status_code != 500


@pytest.mark.parametrize(
    "answer",
    [
        tool_use_message(("memory__search_text", {"query": "\ud800"})),
        tool_use_message(("memory__store_fact", {"key": "note", "value": "a\udfffb"})),
        text_message("Bonjour \ud800"),
    ],
    ids=["tool-query", "tool-value", "text"],
)
def test_a_lone_surrogate_from_the_llm_is_no_500(llm, owner, answer):
    llm.script(answer, text_message("Fait."))

    response = owner.post(
        CHAT, {"channel": "mission_control", "message": "Bonjour"}, content_type="application/json"
    )

    assert response.status_code != 500, response.content[:200]
    assert Message.objects.filter(role="user", content="Bonjour").exists()
