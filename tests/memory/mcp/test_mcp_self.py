"""The MCP tools about the agent itself and its goals, over HTTP with the SDK's own client.

self_search / self_remember / self_forget reach the same services as the agent's own
tools: items deduplicated, kept apart from the owner's facts, deleted with a reason.
"""

from __future__ import annotations

import pytest

from memory.models import Fact, FactKind
from tests.memory.mcp.test_mcp_http import _run, token  # noqa: F401 (token is a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

CAPABILITY = {"content": "Je peux lire le Lobby de Mickael", "category": "capability"}
GOAL = {
    "kind": "goal",
    "content": "Comprendre les horaires de travail de Mickael",
    "category": "understanding",
}


def test_the_agent_remembers_finds_and_forgets_what_it_knows_of_itself(live_server, token):  # noqa: F811
    async def steps(client):
        out = {"added": await client.call_tool("self_remember", CAPABILITY)}
        out["again"] = await client.call_tool("self_remember", CAPABILITY)
        out["goal"] = await client.call_tool("self_remember", GOAL)
        out["found"] = await client.call_tool("self_search", {"query": "lire le lobby"})
        out["goals"] = await client.call_tool("self_search", {"query": "horaires", "kind": "goal"})
        out["owner"] = await client.call_tool("search", {"query": "lobby", "mode": "text"})
        item_id = out["added"].structured_content["item"]["id"]
        out["forgot"] = await client.call_tool(
            "self_forget", {"id": item_id, "reason": "ce n'est plus vrai"}
        )
        out["twice"] = await client.call_tool(
            "self_forget", {"id": item_id, "reason": "ce n'est plus vrai"}
        )
        out["after"] = await client.call_tool("self_search", {"query": "lire le lobby"})
        return out

    out = _run(f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps)

    for name, result in out.items():
        assert not result.is_error, (name, result.content[0].text)
    added = out["added"].structured_content
    assert added["action"] == "added" and added["item"]["category"] == "capability"
    assert out["again"].structured_content["action"] == "noop"  # not stored twice
    assert Fact.all_objects.filter(kind=FactKind.SELF).count() == 1
    found = [r["content"] for r in out["found"].structured_content["results"]]
    assert found[0] == CAPABILITY["content"]
    goals = [r["content"] for r in out["goals"].structured_content["results"]]
    assert goals == [GOAL["content"]]  # the goal only, not what the agent is
    assert out["owner"].structured_content["results"] == []  # apart from the owner's facts
    assert out["forgot"].structured_content["deleted"] is True
    assert out["twice"].structured_content == {
        "deleted": False,
        "id": added["item"]["id"],
        "message": "Déjà supprimé.",
    }
    after = [r["content"] for r in out["after"].structured_content["results"]]
    assert CAPABILITY["content"] not in after
    item = Fact.all_objects.get(pk=added["item"]["id"])
    assert item.forgotten and set(item.revisions.values_list("actor", flat=True)) == {"agent"}


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "self_remember",
            {"content": "Je range mes notes", "category": "rangement"},
            "Catégorie inconnue pour self : « rangement »",
        ),
        ("self_remember", {"content": "   ", "category": "capability"}, "vide"),
        ("self_search", {"query": "moi", "kind": "owner"}, "kind : doit valoir"),
        ("self_forget", {"id": 999_999, "reason": "fini"}, "999999"),
        ("self_forget", {"id": 1, "reason": "fini", "kind": "goal"}, "Aucun souvenir d'objectif"),
    ],
)
def test_bad_arguments_come_back_as_french_tool_errors(
    live_server,
    token,  # noqa: F811
    tool,
    arguments,
    message,
):
    async def steps(client):
        return await client.call_tool(tool, arguments)

    result = _run(f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps)
    assert result.is_error
    assert message in result.content[0].text
