"""A fake Obsidian Local REST API (coddingtonbear/obsidian-local-rest-api) over HTTPS.

It speaks the plugin's wire format for what Makilab uses:

- ``GET /`` (no auth): the status document;
- ``GET /vault/<url-encoded path>``: the raw note (text/markdown), or the
  note JSON (``application/vnd.olrapi.note+json``), 404 ``{"message", "errorCode": 40400}``;
- ``POST /search/`` with ``Content-Type: application/vnd.olrapi.jsonlogic+json``:
  the JsonLogic expression is applied to each note's metadata object
  ``{tags, frontmatter, stat, path, content}`` and ``[{"filename", "result"}]``
  lists the notes whose result is "sanely truthy" (non-empty list/object);
- every other route needs ``Authorization: Bearer <key>``, else 401 / 40101.

The metadata Obsidian would compute (inline tags, parsed front matter) is
given by the test with each note, as Obsidian's metadata cache would hold
it, so the fake never borrows the parser under test. ``tags`` is built the
way the plugin builds it: front-matter tags when they are a list, then the
inline tags, '#' stripped, duplicates removed.

TLS: a certificate for 127.0.0.1 issued by a trustme CA; the TLS handshake
happens in the handler thread, so a client that refuses the certificate does
not stall the server. ``hang`` makes every authenticated route wait (to test
client timeouts); ``stop()`` releases waiting handlers.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import trustme

JSONLOGIC = "application/vnd.olrapi.jsonlogic+json"
NOTE_JSON = "application/vnd.olrapi.note+json"


@dataclass
class FakeNote:
    content: str
    # As Obsidian's metadata cache holds them: inline tags keep their '#'.
    inline_tags: list[str] = field(default_factory=list)
    frontmatter: dict = field(default_factory=dict)

    def metadata(self, path: str) -> dict:
        fm_tags = self.frontmatter.get("tags")
        tags: list[str] = []
        for tag in [*(fm_tags if isinstance(fm_tags, list) else []), *self.inline_tags]:
            if tag:
                value = str(tag).removeprefix("#")
                if value not in tags:
                    tags.append(value)
        return {
            "tags": tags,
            "frontmatter": dict(self.frontmatter),
            "stat": {"ctime": 0, "mtime": 0, "size": len(self.content.encode())},
            "path": path,
            "content": self.content,
        }


class JsonLogicError(Exception):
    pass


def _truthy(value: object) -> bool:
    # json-logic-js truthiness: [] is false.
    if isinstance(value, list):
        return len(value) > 0
    return bool(value)


def _var(data: object, name: object, default: object = None) -> object:
    if name in ("", None):
        return data
    current = data
    for part in str(name).split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return default
    return current


def jsonlogic_apply(logic: object, data: object) -> object:
    """The subset of json-logic-js (plus the plugin's glob/regexp) a client may send."""
    if isinstance(logic, list):
        return [jsonlogic_apply(item, data) for item in logic]
    if not isinstance(logic, dict) or len(logic) != 1:
        return logic
    ((op, raw_args),) = logic.items()
    args = raw_args if isinstance(raw_args, list) else [raw_args]
    if op in ("filter", "some", "all", "map"):
        items = jsonlogic_apply(args[0], data)
        items = items if isinstance(items, list) else []
        results = [jsonlogic_apply(args[1], item) for item in items]
        if op == "filter":
            return [item for item, ok in zip(items, results, strict=True) if _truthy(ok)]
        if op == "some":
            return any(_truthy(ok) for ok in results)
        if op == "all":
            return bool(items) and all(_truthy(ok) for ok in results)
        return results
    if op == "or":
        value = None
        for arg in args:
            value = jsonlogic_apply(arg, data)
            if _truthy(value):
                return value
        return value
    if op == "and":
        value = None
        for arg in args:
            value = jsonlogic_apply(arg, data)
            if not _truthy(value):
                return value
        return value
    values = [jsonlogic_apply(arg, data) for arg in args]
    if op == "var":
        return _var(data, values[0] if values else None, values[1] if len(values) > 1 else None)
    if op == "merge":
        merged: list = []
        for value in values:
            merged.extend(value if isinstance(value, list) else [value])
        return merged
    if op == "==":
        return values[0] == values[1]
    if op == "!=":
        return values[0] != values[1]
    if op == "!":
        return not _truthy(values[0])
    if op == "in":
        needle, haystack = values[0], values[1]
        if isinstance(haystack, str):
            return isinstance(needle, str) and needle in haystack
        return isinstance(haystack, list) and needle in haystack
    if op == "regexp":
        pattern, value = values[0], values[1]
        # The plugin: new RegExp(pattern).test(field), only for strings.
        return (
            isinstance(pattern, str) and isinstance(value, str) and bool(re.search(pattern, value))
        )
    if op == "glob":
        pattern, value = values[0], values[1]
        if not (isinstance(pattern, str) and isinstance(value, str)):
            return False
        regex = "^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$"
        return bool(re.match(regex, value))
    raise JsonLogicError(f"Unrecognized operation {op}")


def _sane_truthy(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, list | dict):
        return len(value) > 0
    return bool(value)


class FakeObsidianServer:
    """The fake plugin on 127.0.0.1:<free port>, HTTPS; use as a context manager."""

    def __init__(
        self,
        ca: trustme.CA,
        *,
        api_key: str = "cle-de-test",
        notes: dict[str, FakeNote] | None = None,
        hang: float = 0.0,
    ) -> None:
        self.ca = ca
        self.api_key = api_key
        self.notes: dict[str, FakeNote] = dict(notes or {})
        self.hang = hang
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def ca_cert_file(self, directory: Path) -> str:
        """The CA certificate as a PEM file, what OBSIDIAN_CA_CERT points at."""
        target = Path(directory) / "obsidian-ca.pem"
        self.ca.cert_pem.write_to_path(str(target))
        return str(target)

    def start(self) -> FakeObsidianServer:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
        fake = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request, client_address):
                try:
                    request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    request = context.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    return  # the client refused our certificate, or went away
                super().finish_request(request, client_address)

            def handle_error(self, request, client_address):
                pass  # a client that times out and hangs up is expected here

        class Handler(_Handler):
            server_fake = fake

        self._server = Server(("127.0.0.1", 0), Handler)
        # A short poll interval keeps stop() (shutdown) quick between tests.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeObsidianServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeObsidianServer
    protocol_version = "HTTP/1.1"
    # Buffered writes: headers and body leave in one segment, as from the real
    # plugin (unbuffered, Nagle + delayed ACK add ~40 ms per response).
    wbufsize = -1

    def log_message(self, format, *args):
        pass

    # --- plumbing ---

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: object) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json; charset=utf-8")

    def _error(self, status: int, error_code: int, message: str) -> None:
        self._json(status, {"message": message, "errorCode": error_code})

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self, body: bytes) -> None:
        self.server_fake.requests.append((self.command, self.path, dict(self.headers), body))

    def _authorized(self) -> bool:
        if self.headers.get("Authorization") == f"Bearer {self.server_fake.api_key}":
            return True
        self._error(401, 40101, "Authorization required.  Find your API Key in the settings.")
        return False

    def _maybe_hang(self) -> None:
        if self.server_fake.hang:
            self.server_fake._stopping.wait(self.server_fake.hang)

    # --- routes ---

    def do_GET(self) -> None:
        self._record(b"")
        raw_path = urlsplit(self.path).path
        if raw_path == "/":
            self._json(
                200,
                {"status": "OK", "service": "Obsidian Local REST API", "authenticated": False},
            )
            return
        if not self._authorized():
            return
        self._maybe_hang()
        if not raw_path.startswith("/vault/"):
            self._error(404, 40400, "Not Found")
            return
        path = unquote(raw_path[len("/vault/") :])
        note = self.server_fake.notes.get(path)
        if note is None:
            self._error(404, 40400, "Not Found")
            return
        if self.headers.get("Accept") == NOTE_JSON:
            self._send(200, json.dumps(note.metadata(path)).encode(), NOTE_JSON)
            return
        self._send(200, note.content.encode(), "text/markdown; charset=utf-8")

    def do_POST(self) -> None:
        body = self._body()
        self._record(body)
        if not self._authorized():
            return
        self._maybe_hang()
        if urlsplit(self.path).path != "/search/":
            self._error(404, 40400, "Not Found")
            return
        if self.headers.get("Content-Type") != JSONLOGIC:
            self._error(400, 40012, "Incoming content did not come with a valid Content-Type.")
            return
        try:
            logic = json.loads(body)
            results = []
            for path, note in sorted(self.server_fake.notes.items()):
                if not path.endswith(".md"):
                    continue
                value = jsonlogic_apply(logic, note.metadata(path))
                if _sane_truthy(value):
                    results.append({"filename": path, "result": value})
        except (ValueError, JsonLogicError, IndexError) as exc:
            self._error(400, 40016, f"Invalid filter query: {exc}")
            return
        self._json(200, results)
