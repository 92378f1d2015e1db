"""QA: an LLM answer holding a lone UTF-16 surrogate (``"\\ud800"``, valid JSON on the
wire) makes the chat answer a 500 instead of a French error.

Reproduced on a running serve (fake Anthropic on 127.0.0.1): the model answers a
tool_use ``memory__search_text {"query": "\\ud800"}`` (or ``memory__store_fact`` with a
value holding ``\\udfff``). The tool refuses it as an internal error, then the next
request of the answer re-sends that tool_use block: the SDK cannot encode the input to
UTF-8 (UnicodeEncodeError in anthropic._utils._json.openapi_dumps, not an
AnthropicError, so agent.client does not translate it) and ``POST
/api/v1/agent/chat`` answers 500 (an HTML page), ``/chat/send/`` the same. A text
answer with a lone surrogate fails the same way when the reply is saved. The API
itself refuses a surrogate in the owner's message in French (« Les caractères de
substitution ne sont pas autorisés »). Expected: the owner's message is kept (it is)
and a French 502/503-style error or a reply, never a 500.
"""

from __future__ import annotations

import pytest

from memory.models import Message
from tests.fakes.anthropic import fake_anthropic, text_message, tool_use_message  # noqa: F401

pytestmark = pytest.mark.django_db

CHAT = "/api/v1/agent/chat"


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings, tmp_path):  # noqa: F811
    settings.AGENT_COALESCE_SECONDS = 0
    settings.ANTHROPIC_MAX_RETRIES = 0
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return fake_anthropic


@pytest.fixture
def api(staff_client):
    staff_client.raise_request_exception = False  # a 500 as a served request answers it
    return staff_client


@pytest.mark.parametrize(
    "answer",
    [
        tool_use_message(("memory__search_text", {"query": "\ud800"})),
        tool_use_message(("memory__store_fact", {"key": "note", "value": "a\udfffb"})),
        text_message("Bonjour \ud800"),
    ],
    ids=["tool-query", "tool-value", "text"],
)
def test_a_lone_surrogate_from_the_llm_is_no_500(world, api, answer):
    world.script(answer, text_message("Fait."))

    response = api.post(
        CHAT, {"channel": "mission_control", "message": "Bonjour"}, content_type="application/json"
    )

    assert response.status_code != 500, response.content[:200]
    assert Message.objects.filter(role="user", content="Bonjour").exists()
