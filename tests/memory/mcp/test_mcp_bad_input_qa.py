"""Malformed input on both MCP transports gets a JSON-RPC error, in French, with the right code.

QA, before the fixes: over stdio a line whose « id » was an object, a list, a float,
a boolean or null got no answer at all (the SDK read it as a notification: nothing
ran, the client waited), and bytes that were not UTF-8 were read with replacement
characters and stored (« Le caf\ufffd est fort »). Over HTTP, a message that was no
JSON-RPC request (no « jsonrpc », another version, « params » not an object, a batch)
was answered -32602 (invalid params) where JSON-RPC says -32600, the code stdio gives
the same line; a lone UTF-16 surrogate (``"\\ud800"``) or bytes that were not UTF-8
were « le message JSON-RPC n'a pas pu être lu », without saying why.
"""

from __future__ import annotations

import http.client
import json
import select
from urllib.parse import urlsplit

import pytest
from rest_framework.authtoken.models import Token

from memory.api.parsers import (
    JSON_BAD_ENCODING_REASON,
    JSON_DUPLICATE_KEY_REASON,
    JSON_INVALID_MESSAGE,
)
from memory.mcp.transport_errors import BAD_ID_MESSAGE, NOT_JSON_RPC_MESSAGE
from memory.models import Fact
from memory.services.portability_validate import LONE_SURROGATE
from tests.memory.mcp import mcp_stdio_started
from tests.memory.mcp.test_mcp_http import INITIALIZE

NOT_UTF8_MESSAGE = JSON_INVALID_MESSAGE.format(
    reason=JSON_BAD_ENCODING_REASON.format(encoding="utf-8")
)
LONE_SURROGATE_MESSAGE = JSON_INVALID_MESSAGE.format(reason=LONE_SURROGATE)
# A key given twice (which value would be the memory's?): the REST API refuses it with this
# message; before, MCP kept the last value (« Paris » below was stored).
TWICE_VALUE = (
    b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember",'
    b' "arguments": {"key": "cafe", "value": "Lyon", "value": "Paris"}}}'
)
TWICE_ID = b'{"jsonrpc": "2.0", "id": 2, "id": 3, "method": "ping"}'
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _remember(value: str, request_id: object = 2) -> dict:
    arguments = {"key": "cafe", "value": value}
    params = {"name": "remember", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _raw(message: dict) -> bytes:
    """``message`` as JSON bytes; a lone surrogate in it is written as its \\u escape."""
    return json.dumps(message).encode()


# --- streamable HTTP ---------------------------------------------------------------------


@pytest.fixture
def post(live_server, django_user_model):
    """post(body bytes) -> (status, parsed JSON answer), the body sent byte for byte."""
    agent = django_user_model.objects.create_user(username="agent", password=None)
    token = Token.objects.create(user=agent).key
    address = urlsplit(live_server.url)

    def send(body: bytes) -> tuple[int, dict]:
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
        try:
            connection.request(
                "POST",
                "/mcp",
                body=body,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            response = connection.getresponse()
            return response.status, json.loads(response.read().decode("utf-8"))
        finally:
            connection.close()

    return send


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "body",
    [
        b'{"id": 1, "method": "ping"}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
        b'{"jsonrpc": 2.0, "id": 1, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1, 2]}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "x"}',
        b"[]",
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"foo": 1}]',
    ],
    ids=[
        "no-jsonrpc",
        "version-1.0",
        "version-a-number",
        "method-a-number",
        "params-a-list",
        "params-a-text",
        "empty-batch",
        "mixed-batch",
    ],
)
def test_a_message_that_is_no_json_rpc_request_is_an_invalid_request(post, body):
    status, answer = post(body)

    assert (status, answer["id"], answer["error"]["code"]) == (400, None, -32600), answer
    assert answer["error"]["message"] == NOT_JSON_RPC_MESSAGE


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "message",
    [
        _remember("a\ud800b"),
        {"jsonrpc": "2.0", "id": 1, "method": "pi\udc00ng"},
        {"jsonrpc": "2.0", "id": "a\ud800", "method": "ping"},
        {**_remember("Lyon"), "params": {"name": "remember", "arguments": {"k\ud800": "x"}}},
        {**PING, "\ud800": 1},
    ],
    ids=["in-an-argument", "in-the-method", "in-the-id", "in-an-argument-name", "in-a-key"],
)
def test_a_lone_surrogate_is_a_parse_error_that_says_so(post, message):
    status, answer = post(_raw(message))

    assert (status, answer["id"], answer["error"]["code"]) == (400, None, -32700), answer
    assert answer["error"]["message"] == LONE_SURROGATE_MESSAGE
    assert not Fact.all_objects.exists()


@pytest.mark.django_db(transaction=True)
def test_bytes_that_are_not_utf8_are_a_parse_error_that_says_so(post):
    body = _raw(_remember("Le caf\N{LATIN SMALL LETTER E WITH ACUTE} est fort"))

    status, answer = post(body.replace(b"\\u00e9", b"\xe9"))  # latin-1, not UTF-8

    assert (status, answer["id"], answer["error"]["code"]) == (400, None, -32700), answer
    assert answer["error"]["message"] == NOT_UTF8_MESSAGE
    assert not Fact.all_objects.exists()


def _twice(key: str) -> str:
    return JSON_INVALID_MESSAGE.format(reason=JSON_DUPLICATE_KEY_REASON.format(key=key))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("body", "key"), [(TWICE_VALUE, "value"), (TWICE_ID, "id")], ids=["in-arguments", "the-id"]
)
def test_a_key_given_twice_is_a_parse_error_that_names_it(post, body, key):
    status, answer = post(body)

    assert (status, answer["id"], answer["error"]["code"]) == (400, None, -32700), answer
    assert answer["error"]["message"] == _twice(key)
    assert not Fact.all_objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_surrogate_pair_and_accents_are_text(post):
    """What the checks above refuse is only what no UTF-8 text holds."""
    status, answer = post(_raw(_remember("Le café est fort \N{HOT BEVERAGE} \U0001f600")))

    assert (status, answer["result"]["isError"]) == (200, False), answer
    assert Fact.objects.get(key="cafe").value == "Le café est fort \N{HOT BEVERAGE} \U0001f600"


# --- stdio -------------------------------------------------------------------------------


@pytest.fixture
def stdio(tmp_path):
    """exchange(line bytes) -> the answer's JSON, or None when none came within a few
    seconds; `manage.py mcp` as a client starts it, initialized."""
    process = mcp_stdio_started(tmp_path)

    def exchange(line: bytes, timeout: float = 10) -> dict | None:
        process.stdin.write(line + b"\n")
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        return json.loads(process.stdout.readline()) if ready else None

    try:
        assert exchange(_raw(INITIALIZE), timeout=120)["id"] == 1
        process.stdin.write(_raw({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        process.stdin.write(b"\n")
        yield exchange
    finally:
        process.stdin.close()
        process.wait(timeout=60)


def _recent_keys(exchange) -> list[str]:
    params = {"name": "recent", "arguments": {}}
    answer = exchange(_raw({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": params}))
    return [fact["key"] for fact in answer["result"]["structuredContent"]["facts"]]


@pytest.mark.slow
def test_stdio_answers_a_bad_id_a_lone_surrogate_bytes_not_utf8_and_a_key_twice(stdio):
    refusals = [
        (_raw(_remember("Lyon", request_id=bad)), -32600, BAD_ID_MESSAGE)
        for bad in ({"a": 1}, [1], 1.5, True, None)
    ]
    refusals += [
        (_raw(_remember("a\ud800b")), -32700, LONE_SURROGATE_MESSAGE),
        (_raw(_remember("Le café")).replace(b"\\u00e9", b"\xe9"), -32700, NOT_UTF8_MESSAGE),
        (TWICE_VALUE, -32700, _twice("value")),
    ]

    answers = [stdio(line) for line, _, _ in refusals]

    expected = [
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
        for _, code, message in refusals
    ]
    assert answers == expected
    assert _recent_keys(stdio) == []  # none of them ran
    assert stdio(_raw({**PING, "id": "encore"}))["id"] == "encore"
