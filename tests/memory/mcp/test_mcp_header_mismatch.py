"""Over /mcp, a 2026-07-28 request whose Mcp-Name header does not repeat its body (or
lacks it) is refused in French (QA 6: the transport's check answered -32020 in English,
where every other malformed request is said in French)."""

from __future__ import annotations

import json

import pytest

from tests.memory.mcp.test_mcp_http import _post, token  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _call(live_server, bearer, params, mcp_name):
    headers = {
        "Authorization": f"Bearer {bearer}",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "resources/read",
    }
    if mcp_name is not None:
        headers["Mcp-Name"] = mcp_name
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "resources/read",
        "params": {**params, "_meta": META},
    }
    status, _headers, text = _post(f"{live_server.url}/mcp", body, headers)
    return status, json.loads(text)


def test_a_well_formed_read_works(live_server, token):  # noqa: F811
    status, answer = _call(live_server, token, {"uri": "memory://settings"}, "memory://settings")
    assert status == 200 and "result" in answer, answer


@pytest.mark.parametrize("mcp_name", [None, "memory://facts/identity"], ids=["missing", "other"])
def test_a_name_header_that_does_not_match_is_refused_in_french(
    live_server,
    token,  # noqa: F811
    mcp_name,
):
    status, answer = _call(live_server, token, {"uri": "memory://settings"}, mcp_name)
    assert status == 400
    assert answer["error"]["code"] == -32020
    assert answer["error"]["message"].startswith(
        "En-tête Mcp-Name absent ou différent du corps de la requête"
    ), answer
