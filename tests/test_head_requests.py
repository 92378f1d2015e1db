"""A HEAD request is answered with the GET's headers and no body, through serve's waitress.

Django leaves that to the server (its runserver strips the body) and waitress sends what
the application gives (QA: 472 body bytes after the headers of a HEAD on a fact, which
a keep-alive client then read as the start of its next answer: « BadStatusLine »).
"""

from __future__ import annotations

import socket

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def waitress_url():
    from makilab.wsgi import application
    from tests.waitress_serving import waitress_serving

    with waitress_serving(application, ident="makilab") as port:
        yield port


def _answers(port: int, requests: list[bytes]) -> bytes:
    """What the server sends back on one connection for these requests, the last closing it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(requests))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _request(method: str, path: str, *, close: bool = False) -> bytes:
    connection = "close" if close else "keep-alive"
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: {connection}\r\n\r\n".encode()
    )


@pytest.mark.parametrize("path", ["/login/", "/api/memory/facts", "/api/memory/nulle-part"])
def test_a_head_request_gets_the_headers_and_no_body(waitress_url, path):
    data = _answers(waitress_url, [_request("HEAD", path), _request("GET", path, close=True)])

    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), head
    # The GET's answer follows the HEAD's headers at once: no body came between.
    assert rest.startswith(b"HTTP/1.1 "), rest[:80]
    get_head, _, get_body = rest.partition(b"\r\n\r\n")
    length = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
    assert length and length == [
        line for line in get_head.split(b"\r\n") if line.lower().startswith(b"content-length")
    ]
    assert int(length[0].split(b":")[1]) == len(get_body) > 0
