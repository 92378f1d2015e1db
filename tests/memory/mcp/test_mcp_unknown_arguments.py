"""An argument a tool does not declare is refused in French, never silently dropped.

The SDK's argument model ignores extra keys: a misspelt filter ("chanel") widened a
search, `"kind": "self"` stored an owner fact, `"dry_run": false` was ignored. The
API refuses the same typos with « Champ inconnu. »; the MCP tools say the same.
"""

from __future__ import annotations

import asyncio

import pytest

from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.mcp.tools import INVALID_INPUT_MESSAGE
from memory.models import Fact, Forgetting, MemoryRetrieval

pytestmark = pytest.mark.django_db(transaction=True)


def _unknown(tool: str, *names: str) -> str:
    detail = " ".join(f"{name} : {UNKNOWN_FIELD_MESSAGE}" for name in names)
    return INVALID_INPUT_MESSAGE.format(tool=tool, detail=detail)


@pytest.mark.parametrize(
    "tool, arguments, unknown",
    [
        # The client believes it stored one of the agent's self items.
        (
            "remember",
            {"key": "moi_lobby", "value": "Je peux lire le Lobby", "kind": "self"},
            "kind",
        ),
        # A misspelt type would store a plain "fact" of default importance.
        ("remember", {"key": "prenom", "value": "Mickael", "memory_typ": "identity"}, "memory_typ"),
        ("search", {"query": "vélo", "chanel": "whatsapp"}, "chanel"),
        ("context", {"message": "Bonjour", "chanel": "whatsapp"}, "chanel"),
        ("forget", {"topic": "le vélo rouge", "dry_run": False}, "dry_run"),
        ("self_search", {"query": "lobby", "kinds": "goal"}, "kinds"),
    ],
)
def test_an_mcp_tool_refuses_an_unknown_argument_in_french(
    mcp, vector_store, local_embedder, settings, tool, arguments, unknown
):

    result = mcp(tool, arguments)

    assert result.is_error, result.content[0].text[:300]
    assert result.content[0].text == _unknown(tool, unknown)
    # Refused before the tool runs: nothing stored, searched, logged nor forgotten.
    assert not Fact.all_objects.exists()
    assert not MemoryRetrieval.objects.exists()
    assert not Forgetting.objects.exists()


def test_every_unknown_argument_is_named_in_order(mcp):
    result = mcp("remember", {"key": "k", "value": "v", "memory_typ": "goal", "kind": "self"})
    assert result.content[0].text == _unknown("remember", "kind", "memory_typ")


def test_every_tool_advertises_that_it_takes_no_other_argument():
    from memory.mcp.server import build_server

    tools = asyncio.run(build_server().list_tools())

    assert tools
    for tool in tools:
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.input_schema["properties"], tool.name


@pytest.mark.parametrize(
    "arguments", ["x", [1, 2], 5, None], ids=["text", "list", "number", "null"]
)
def test_arguments_that_are_not_an_object_are_refused_in_process_too(mcp, arguments):
    """Over a transport the server's middleware answers first (test_mcp_http.py)."""
    from memory.mcp.server import ARGUMENTS_NOT_AN_OBJECT_MESSAGE

    result = mcp("search", arguments)

    assert result.is_error
    assert result.content[0].text == ARGUMENTS_NOT_AN_OBJECT_MESSAGE.format(tool="search")
