"""What the MCP transport refuses before any tool runs is said in French, in JSON-RPC's shape.

The SDK's transport answered a body that is not JSON, not a JSON-RPC message, a
wrong Accept or Content-Type, a body too large and an unknown method in English,
one of them with pydantic's internals and a link to its documentation; a request whose id
is of no JSON-RPC type was taken for a notification (202, nothing run).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from rest_framework.authtoken.models import Token

from memory.mcp.transport_errors import (
    BAD_CONTENT_TYPE_MESSAGE,
    BAD_ID_MESSAGE,
    NOT_ACCEPTABLE_MESSAGE,
    NOT_JSON_MESSAGE,
    NOT_JSON_RPC_MESSAGE,
    TOO_LARGE_MESSAGE,
    UNKNOWN_METHOD_MESSAGE,
)
from memory.models import Fact

pytestmark = pytest.mark.django_db(transaction=True)

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


@pytest.fixture
def headers(django_user_model):
    agent = django_user_model.objects.create_user(username="agent", password=None)
    return {
        "Authorization": f"Bearer {Token.objects.create(user=agent).key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }


def _post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _error(status: int, answer: dict) -> tuple[int, str]:
    assert answer["jsonrpc"] == "2.0", answer
    return status, answer["error"]["message"]


@pytest.mark.parametrize(
    ("body", "header", "status", "message"),
    [
        (b"{bad json", {}, 400, NOT_JSON_MESSAGE),
        (b"[]", {}, 400, NOT_JSON_RPC_MESSAGE),
        (b"null", {}, 400, NOT_JSON_RPC_MESSAGE),
        (b'{"id": 1}', {}, 400, NOT_JSON_RPC_MESSAGE),
        (PING, {"Accept": "text/html"}, 406, NOT_ACCEPTABLE_MESSAGE),
        (PING, {"Content-Type": "text/plain"}, 400, BAD_CONTENT_TYPE_MESSAGE),
    ],
    ids=["not-json", "a-list", "null", "no-method", "accept", "content-type"],
)
def test_a_refused_request_is_answered_in_french(
    live_server, headers, body, header, status, message
):
    assert _error(*_post(f"{live_server.url}/mcp", body, {**headers, **header})) == (
        status,
        message,
    )


def test_a_body_too_large_is_answered_in_french(live_server, headers, settings):
    body = b'{"x": "' + b"a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10) + b'"}'
    status, message = _error(*_post(f"{live_server.url}/mcp", body, headers))
    assert (status, message) == (
        413,
        TOO_LARGE_MESSAGE.format(limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
    )


def test_an_unknown_method_is_named_in_french_with_its_json_rpc_code(live_server, headers):
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "nope/nope", "params": {}}).encode()
    status, answer = _post(f"{live_server.url}/mcp", body, headers)
    assert (status, answer["id"], answer["error"]["code"]) == (200, 7, -32601)
    assert answer["error"]["message"] == UNKNOWN_METHOD_MESSAGE.format(method="nope/nope")


def test_what_the_server_already_says_in_french_is_left_as_it_is(live_server, headers):
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": 5}}
    ).encode()
    status, answer = _post(f"{live_server.url}/mcp", body, headers)
    assert answer["error"]["code"] == -32602
    assert "uri : doit être un texte." in answer["error"]["message"]


@pytest.mark.parametrize(
    "bad_id", [{"a": 1}, [1], True, None, 1.5], ids=["object", "list", "bool", "null", "float"]
)
def test_a_request_whose_id_is_no_string_nor_integer_is_refused(live_server, headers, bad_id):
    """QA: a 202 with an empty body; the tool did not run and the client waited for an
    answer that never came."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": bad_id,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"key": "ville", "value": "Lyon"}},
        }
    ).encode()

    status, answer = _post(f"{live_server.url}/mcp", body, headers)

    assert (status, answer["id"], answer["error"]["code"]) == (400, None, -32600)
    assert answer["error"]["message"] == BAD_ID_MESSAGE
    assert not Fact.objects.exists()


def test_a_request_with_a_string_id_is_answered(live_server, headers):
    body = json.dumps({"jsonrpc": "2.0", "id": "a-1", "method": "ping"}).encode()
    status, answer = _post(f"{live_server.url}/mcp", body, headers)
    assert (status, answer["id"], answer.get("error")) == (200, "a-1", None)
