"""Through serve's waitress, a request target holding raw UTF-8 is the same request as its
percent-encoded form (makilab/http_server.py).

curl sends ``GET /api/v1/memory/search?q=vélo`` as typed; waitress alone answered it
« Bad Request / Bad URI », in English and text/plain, before Django saw it (QA).
"""

from __future__ import annotations

import json
import socket

import pytest
from rest_framework.authtoken.models import Token

from makilab.request_encoding import QUERY_BAD_ENCODING_MESSAGE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waitress_port():
    from makilab.wsgi import application
    from tests.waitress_serving import waitress_serving

    with waitress_serving(application, ident="makilab") as port:
        yield port


@pytest.fixture
def token(django_user_model) -> str:
    agent = django_user_model.objects.create_user(username="agent", password=None)
    return Token.objects.create(user=agent).key


def _get(port: int, target: bytes, token: str) -> tuple[int, dict]:
    """The status and the JSON body of ``GET target``, the target sent byte for byte."""
    # HTTP/1.0: the answer ends with the connection, never chunked.
    request = b"GET " + target + b" HTTP/1.0\r\nHost: 127.0.0.1\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request + f"Authorization: Token {token}\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"application/json" in head.lower(), data
    return int(head.split(b" ", 2)[1]), json.loads(body)


@pytest.mark.parametrize(
    "raw,escaped",
    [
        ("/api/v1/memory/search?q=vélo", "/api/v1/memory/search?q=v%C3%A9lo"),
        ("/api/v1/memory/facts/vélo", "/api/v1/memory/facts/v%C3%A9lo"),
        ("/api/v1/memory/nulle-part-é", "/api/v1/memory/nulle-part-%C3%A9"),
    ],
)
def test_a_raw_utf8_target_is_answered_as_its_percent_encoded_form(
    waitress_port, token, raw, escaped
):
    assert _get(waitress_port, raw.encode(), token) == _get(waitress_port, escaped.encode(), token)


def test_a_raw_utf8_search_reads_the_words_as_typed(waitress_port, token):
    status, body = _get(waitress_port, "/api/v1/memory/search?q=vélo".encode(), token)

    assert status == 200
    assert body["query"] == "vélo"


def test_raw_bytes_that_are_not_utf8_get_the_french_400(waitress_port, token):
    status, body = _get(waitress_port, "/api/v1/memory/search?q=vélo".encode("latin-1"), token)

    assert status == 400
    assert body["message"] == QUERY_BAD_ENCODING_MESSAGE.format(encoding="utf-8")
