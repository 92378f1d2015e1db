"""A fact's channel is not checked: ``POST /api/v1/memory/facts`` (and MCP ``remember``, and
``memory_import``) store a fact with the channel « bad channel/.. », which every other place
refuses in French (« Le canal doit être un nom court (lettres, chiffres, - et _), 64 caractères
au plus. »: messages, ``/search?channel=``, MCP ``context``), so the owner cannot even filter
a search on the channel the fact was stored under."""

from __future__ import annotations

import pytest

from tests.memory.api.conftest import agent_api, agent_token, agent_user, owner_api  # noqa: F401

pytestmark = pytest.mark.django_db

BAD = "bad channel/.."


def test_the_search_refuses_that_channel(owner_api):
    answer = owner_api.get("/api/v1/memory/search", {"q": "x", "mode": "text", "channel": BAD})
    assert answer.status_code == 400


def test_the_messages_api_refuses_that_channel(agent_api):
    answer = agent_api.post(
        "/api/v1/memory/messages", {"channel": BAD, "content": "Bonjour"}, format="json"
    )
    assert answer.status_code == 400


@pytest.mark.parametrize("client_name", ["owner_api", "agent_api"])
def test_a_fact_with_that_channel_is_refused(request, client_name):
    client = request.getfixturevalue(client_name)
    answer = client.post(
        "/api/v1/memory/facts",
        {"key": "canal_test", "value": "Le vélo est gris", "channel": BAD},
        format="json",
    )
    assert answer.status_code == 400, answer.json()
