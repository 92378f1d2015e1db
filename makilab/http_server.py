"""waitress as `serve` runs it: a request target with raw UTF-8 reaches Django.

waitress 3 splits the request target with urllib's ``urlsplit``, which reads bytes as
ASCII: one byte above 0x7F (curl sends ``GET /api/v1/memory/search?q=vélo`` as typed,
unescaped) and waitress answers its own English text/plain « Bad Request / Bad URI »
before the application sees the request (waitress.parser.split_uri). RFC 9112 wants
such bytes percent-encoded, which is what a browser does before sending; other servers
(nginx, gunicorn, Django's runserver) pass them on. Here waitress's parser does what the
browser would have done: each byte above 0x7F in the request line becomes ``%XX``
before waitress splits it. Nothing else changes: waitress percent-decodes the path
either way (PATH_INFO holds the same bytes), and Django decodes ``q=v%C3%A9lo`` as it
would ``q=vélo``; bytes that are not UTF-8 get the site's French 400
(makilab/request_encoding.py), as their escaped form already did.
"""

from __future__ import annotations

import re

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser

_RAW_BYTE = re.compile(rb"[\x80-\xff]")


def _percent_encoded(match: re.Match[bytes]) -> bytes:
    return b"%%%02X" % match.group()[0]


class RawUtf8TargetParser(HTTPRequestParser):
    """waitress's parser, the bytes above 0x7F of the request line percent-encoded first."""

    def parse_header(self, header_plus: bytes):
        # The method and the version are ASCII tokens: only the target can hold such bytes.
        first_line, crlf, headers = header_plus.partition(b"\r\n")
        return super().parse_header(_RAW_BYTE.sub(_percent_encoded, first_line) + crlf + headers)


class RawUtf8TargetChannel(HTTPChannel):
    parser_class = RawUtf8TargetParser


def http_server_create(application, **options):
    """``waitress.create_server(application, **options)``, each of its listening sockets
    reading requests with RawUtf8TargetParser."""
    from waitress import create_server
    from waitress.server import BaseWSGIServer

    # create_server builds one server per listening address (a host can resolve to
    # several) and registers each in ``map``: the only place that lists them all.
    dispatchers: dict = {}
    server = create_server(application, map=dispatchers, **options)
    for dispatcher in dispatchers.values():
        if isinstance(dispatcher, BaseWSGIServer):
            dispatcher.channel_class = RawUtf8TargetChannel
    return server
