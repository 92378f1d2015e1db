"""The MCP server over streamable HTTP at /mcp in the running service, with the SDK's own client.

The live server runs the real URLconf and middleware; /mcp hands the request
to the SDK's transport through a2wsgi. A valid API token (``Bearer`` or
``Token``) is required; without one the service answers 401 in French.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from rest_framework.authtoken.models import Token

from memory.mcp.http import POST_ONLY_MESSAGE, TOKEN_REQUIRED_MESSAGE
from memory.mcp.server import (
    ARGUMENTS_NOT_AN_OBJECT_MESSAGE,
    INVALID_PARAMS_MESSAGE,
    RESOURCE_FAILED_MESSAGE,
    TOOL_FAILED_MESSAGE,
    UNKNOWN_PROMPT_MESSAGE,
    UNKNOWN_RESOURCE_MESSAGE,
)
from memory.models import Fact
from tests.memory.mcp import MCP_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@pytest.fixture
def token(django_user_model):
    agent = django_user_model.objects.create_user(username="agent", password=None)
    return Token.objects.create(user=agent).key


def _run(url: str, headers: dict[str, str], steps, mode: str = "auto"):
    """Connect the SDK client with these headers and run ``steps(client)``."""

    async def main():
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode) as client:
                return await steps(client)

    return asyncio.run(main())


def _post(url: str, body: dict, headers: dict[str, str] | None = None, method: str = "POST"):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if method == "POST" else None,
        method=method,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


def test_a_client_with_a_bearer_token_uses_every_tool_and_reads_the_resources(live_server, token):
    url = f"{live_server.url}/mcp"

    async def steps(client):
        out = {"tools": await client.list_tools()}
        out["remembered"] = await client.call_tool(
            "remember",
            {
                "key": "velo_mickael",
                "value": "Le vélo de Mickael est un Btwin gris acheté en 2021",
                "subjects": ["velo"],
            },
        )
        out["found"] = await client.call_tool("search", {"query": "btwin", "mode": "text"})
        # French: accents are ignored by the word search ("velo" finds "vélo").
        out["unaccented"] = await client.call_tool(
            "search", {"query": "velo achete", "mode": "text"}
        )
        out["recent"] = await client.call_tool("recent", {"limit": 5})
        out["preview"] = await client.call_tool("forget", {"topic": "Btwin"})
        out["confirmed"] = await client.call_tool(
            "forget", {"topic": "Btwin", "ids": out["preview"].structured_content["ids"]}
        )
        out["after"] = await client.call_tool("search", {"query": "btwin", "mode": "text"})
        out["settings"] = await client.read_resource("memory://settings")
        out["identity"] = await client.read_resource("memory://facts/identity")
        return out

    out = _run(url, {"Authorization": f"Bearer {token}"}, steps)

    def keys(name):
        return [hit["key"] for hit in out[name].structured_content["results"]]

    assert {t.name for t in out["tools"].tools} == MCP_TOOLS
    assert not out["remembered"].is_error
    assert out["remembered"].structured_content["action"] == "added"
    fact = Fact.all_objects.get(key="velo_mickael")
    assert fact.source == "tool"
    assert set(fact.revisions.values_list("actor", flat=True)) == {"agent"}
    assert keys("found") == ["velo_mickael"]
    assert keys("unaccented") == ["velo_mickael"]
    assert out["recent"].structured_content["facts"][0]["key"] == "velo_mickael"
    preview = out["preview"].structured_content
    assert preview["dry_run"] is True
    assert preview["ids"] == [f"fact:{fact.id}"]
    assert out["confirmed"].structured_content["counts"]["facts"] == 1
    assert "Btwin" not in out["confirmed"].content[0].text  # names nothing forgotten
    assert keys("after") == []
    assert json.loads(out["settings"].contents[0].text)["max_results"] == 4
    assert json.loads(out["identity"].contents[0].text) == {"facts": []}


def test_a_client_of_the_initialize_handshake_era_works_too(live_server, token):
    """Claude Code and Claude Desktop still open with `initialize`."""

    async def steps(client):
        return client.session.protocol_version, await client.list_tools()

    version, tools = _run(
        f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps, mode="legacy"
    )
    assert version.startswith("20")
    assert len(tools.tools) == 8


def test_the_token_keyword_works_too(live_server, token):
    async def steps(client):
        return await client.call_tool("recent", {})

    result = _run(f"{live_server.url}/mcp", {"Authorization": f"Token {token}"}, steps)
    assert not result.is_error
    assert result.structured_content == {"facts": []}


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic b3duZXI6eA=="}],
    ids=["no-token", "bad-token", "basic"],
)
def test_without_a_valid_token_the_service_answers_401_in_french(live_server, token, headers):
    status, response_headers, body = _post(f"{live_server.url}/mcp", INITIALIZE, headers)
    assert status == 401
    assert response_headers["WWW-Authenticate"].startswith("Bearer")
    message = json.loads(body)["message"]
    assert message in (TOKEN_REQUIRED_MESSAGE, "Token non valide.")


def test_the_sdk_client_without_a_token_is_refused(live_server, token):
    async def steps(client):  # never reached
        return await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as refused:
        _run(f"{live_server.url}/mcp", {}, steps)
    assert refused.group_contains(MCPError, match="error response", depth=2)


def test_a_get_is_refused_the_server_is_stateless(live_server, token):
    status, headers, body = _post(
        f"{live_server.url}/mcp", {}, {"Authorization": f"Bearer {token}"}, method="GET"
    )
    assert status == 405
    assert json.loads(body)["message"] == POST_ONLY_MESSAGE


def test_bad_input_is_an_mcp_tool_error_with_a_french_message(live_server, token):
    async def steps(client):
        return (
            await client.call_tool("search", {"query": "vélo", "mode": "fuzzy", "limit": "x"}),
            await client.call_tool("remember", {"key": "a/b", "value": "x"}),
            await client.call_tool("forget", {"topic": "vélo", "ids": ["everything"]}),
            await client.call_tool("context", {"message": "Salut", "channel": "pas un canal"}),
        )

    search, remember, forget, context = _run(
        f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps
    )
    assert search.is_error
    assert search.content[0].text == (
        "Entrée invalide pour search : mode : doit valoir 'semantic', 'text' ou 'hybrid'. "
        "limit : doit être un nombre entier."
    )
    assert remember.is_error
    assert remember.content[0].text.startswith("Entrée invalide pour remember : key : La clé")
    assert forget.is_error
    assert forget.content[0].text.startswith("Entrée invalide pour forget : ids")
    assert context.is_error
    assert "Le canal doit être un nom court" in context.content[0].text
    assert not Fact.all_objects.exists()


def test_a_text_too_short_or_too_long_says_its_bounds_in_french(live_server, token):
    """« reason : valeur invalide. » said nothing of what was wrong (black-box QA)."""

    async def steps(client):
        return (
            await client.call_tool("self_forget", {"id": 1, "reason": ""}),
            await client.call_tool("self_forget", {"id": 1, "reason": "x" * 10_000}),
        )

    short, long = _run(f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps)
    assert short.is_error and long.is_error
    assert short.content[0].text == (
        "Entrée invalide pour self_forget : reason : doit contenir au moins 1 caractère."
    )
    assert "reason : doit contenir au plus " in long.content[0].text
    assert "valeur invalide" not in short.content[0].text + long.content[0].text


def test_an_unexpected_failure_is_a_french_tool_error_without_its_details(
    live_server, token, monkeypatch
):
    def broken(**kwargs):
        raise RuntimeError("détail interne /srv/secret")

    monkeypatch.setattr("memory.services.search.memory_search", broken)

    async def steps(client):
        return await client.call_tool("search", {"query": "vélo"})

    result = _run(f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps)
    assert result.is_error
    assert result.content[0].text == TOOL_FAILED_MESSAGE.format(tool="search")
    assert "secret" not in result.content[0].text


def _rpc(url: str, token: str, method: str, params: dict, *, version: str) -> dict:
    """One JSON-RPC request, as a client of that protocol version sends it (no handshake:
    the server is stateless; a 2026-07-28 request carries its envelope and headers)."""
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": version}
    if version >= "2026":
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }
        headers["Mcp-Method"] = method
        if "name" in params:
            headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return json.loads(_post(url, body, headers)[2])


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
@pytest.mark.parametrize("arguments", ["x", [1, 2], 5], ids=["text", "list", "number"])
def test_tool_arguments_that_are_not_an_object_are_a_french_tool_error(
    live_server, token, arguments, version
):
    """The SDK refused them before any tool ran, with an English -32602."""
    params = {"name": "search", "arguments": arguments}
    answer = _rpc(f"{live_server.url}/mcp", token, "tools/call", params, version=version)

    assert answer["result"]["isError"] is True, answer
    text = answer["result"]["content"][0]["text"]
    assert text == ARGUMENTS_NOT_AN_OBJECT_MESSAGE.format(tool="search")


def test_malformed_request_params_are_refused_in_french(live_server, token):
    answer = _rpc(
        f"{live_server.url}/mcp", token, "resources/read", {"uri": 5}, version="2025-06-18"
    )
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == INVALID_PARAMS_MESSAGE.format(
        method="resources/read", detail="uri : doit être un texte."
    )


def _read_refused(live_server, token, uri: str) -> MCPError:
    """What the real SDK client raises when it reads ``uri`` (None if it was read)."""

    async def steps(client):
        try:
            await client.read_resource(uri)
        except MCPError as exc:
            return exc

    return _run(f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps)


def test_an_unknown_resource_is_said_in_french(live_server, token):
    refused = _read_refused(live_server, token, "memory://nope")

    assert refused.code == -32602
    assert refused.message == UNKNOWN_RESOURCE_MESSAGE.format(
        uri="memory://nope", known="memory://facts/identity, memory://settings"
    )


def test_an_unknown_prompt_is_said_in_french_with_its_json_rpc_code(live_server, token, caplog):
    """QA: {"code": 0, "message": "Unknown prompt: zz"} (the SDK's English) and a traceback
    in the log."""
    answer = _rpc(
        f"{live_server.url}/mcp", token, "prompts/get", {"name": "zz"}, version="2025-06-18"
    )

    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == UNKNOWN_PROMPT_MESSAGE.format(name="zz", known="aucun")
    assert "Traceback" not in caplog.text


def test_a_resource_that_fails_is_said_in_french_without_its_details(
    live_server, token, monkeypatch
):
    def broken():
        raise RuntimeError("détail interne /srv/secret")

    monkeypatch.setattr("memory.selectors.memory_settings_get", broken)

    refused = _read_refused(live_server, token, "memory://settings")

    assert refused.message == RESOURCE_FAILED_MESSAGE.format(uri="memory://settings")
    assert "secret" not in refused.message


def test_the_owners_token_is_refused_in_french_and_writes_nothing(live_server, django_user_model):
    """QA: the owner's (staff) token over /mcp wrote as the agent, so the agent's next
    statement replaced the owner's value, where the same two writes over the API keep the
    owner's. The MCP server writes for the agent: the owner's token is refused (403)."""
    from memory.mcp.http import OWNER_TOKEN_MESSAGE

    owner = django_user_model.objects.create_user(username="moi", password=None, is_staff=True)
    key = Token.objects.create(user=owner).key
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"key": "boisson", "value": "Du thé vert"}},
    }

    for body in (INITIALIZE, call):
        status, _, answer = _post(
            f"{live_server.url}/mcp", body, {"Authorization": f"Bearer {key}"}
        )
        assert status == 403, answer
        assert json.loads(answer)["message"] == OWNER_TOKEN_MESSAGE
    assert not Fact.objects.exists()
