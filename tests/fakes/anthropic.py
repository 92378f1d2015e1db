"""A fake Anthropic Messages API on 127.0.0.1, driven through the real SDK.

It speaks the wire format of POST /v1/messages: the same request checks the
real API makes that matter to us (the key, as x-api-key or as the "Authorization:
Bearer" header anthropic 2.x sends, anthropic-version, required
fields, tool names, every tool_use answered by a tool_result in the next user
turn), answers ``{"type": "message", "content": [...], "usage": {...}}``, and
errors as ``{"type": "error", "error": {"type": ..., "message": ...}}`` with
the real statuses (529 overloaded_error, 500 api_error, 401, 400...).

Scriptable: queue replies with ``script(...)`` (builders below), or set
``handler`` to a function receiving the request JSON and returning a reply (a
``FakeReply``, a message dict, or a plain string for a text answer). A
``hang()`` reply accepts the request and never answers (until ``stop()``).
Every request is recorded in ``requests`` so tests can assert what was sent.

    def test_it(fake_anthropic):
        fake_anthropic.script(text_message("Bonjour"))
        ...
        assert fake_anthropic.requests[0].json["system"].startswith(...)

Use the ``fake_anthropic`` fixture (import it in a conftest): it starts a
server and points ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL at it.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

FAKE_API_KEY = "sk-ant-fake-test-key"
# A hung request is released after this long even if nobody stops the server.
HANG_MAX_S = 30.0
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_ids = itertools.count(1)


@dataclass
class FakeReply:
    status: int = 200
    body: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    delay_s: float = 0.0
    # Streamed replies only: the connection drops after this many server-sent events
    # (no terminating chunk), after an ``event: error`` when ``cut_error`` is set.
    cut_after_events: int | None = None
    cut_error: dict | None = None
    # False: answered as one JSON body even to a stream request (a gateway that does
    # not stream, or that sends its own JSON with a 200).
    streamed: bool = True


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def system(self) -> str:
        """The system prompt as one string (a string or a list of text blocks)."""
        system = (self.json or {}).get("system", "")
        if isinstance(system, list):
            return "\n".join(block.get("text", "") for block in system)
        return system or ""

    @property
    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in (self.json or {}).get("tools", [])]

    @property
    def messages(self) -> list[dict]:
        return (self.json or {}).get("messages", [])

    def tool_results(self) -> list[dict]:
        """The tool_result blocks of the last user turn."""
        if not self.messages:
            return []
        content = self.messages[-1].get("content")
        if not isinstance(content, list):
            return []
        return [block for block in content if block.get("type") == "tool_result"]


# --- Reply builders -------------------------------------------------------------------


def _message_body(
    content: list[dict],
    *,
    stop_reason: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> dict:
    body: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason
        or ("tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"),
        "stop_sequence": None,
    }
    usage: dict[str, int] = {}
    if input_tokens is not None:
        usage["input_tokens"] = input_tokens
    if output_tokens is not None:
        usage["output_tokens"] = output_tokens
    if usage:
        body["usage"] = usage
    return body


def text_message(
    text: str,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    stop_reason: str = "end_turn",
) -> FakeReply:
    """An answer with one text block. Tokens default to an estimate of the request."""
    return FakeReply(
        body=_message_body(
            [{"type": "text", "text": text}],
            stop_reason=stop_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
    )


def tool_use_message(
    *calls: tuple[str, dict],
    text: str = "",
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> FakeReply:
    """An answer asking for tool calls: ``tool_use_message(("memory__search", {"query": "x"}))``."""
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    for name, tool_input in calls:
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_fake_{next(_ids):04d}",
                "name": name,
                "input": tool_input,
            }
        )
    return FakeReply(
        body=_message_body(content, input_tokens=input_tokens, output_tokens=output_tokens)
    )


def error_reply(
    status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None
) -> FakeReply:
    return FakeReply(
        status=status,
        body={"type": "error", "error": {"type": error_type, "message": message}},
        headers=dict(headers or {}),
    )


def overloaded(*, retry_after_ms: int | None = None) -> FakeReply:
    """529 overloaded_error, as Anthropic sends when it is overloaded."""
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return error_reply(529, "overloaded_error", "Overloaded", headers=headers)


def server_error() -> FakeReply:
    return error_reply(500, "api_error", "Internal server error")


def hang() -> FakeReply:
    """Accept the request and never answer (until the server stops)."""
    return FakeReply(hang=True)


def cut_stream(reply: FakeReply, *, after_events: int, error_type: str | None = None) -> FakeReply:
    """``reply`` streamed, but the stream stops after ``after_events`` events: the
    connection drops mid-body (a network cut), or, with ``error_type`` (e.g.
    "overloaded_error"), the server first sends an ``event: error`` as the real API
    does when it fails mid-stream."""
    error = None
    if error_type:
        error = {"type": "error", "error": {"type": error_type, "message": "Overloaded"}}
    return replace(reply, cut_after_events=after_events, cut_error=error)


def _estimate_tokens(value: object) -> int:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return max(1, math.ceil(len(text) / 4))


# --- Request validation (what the real API refuses) -----------------------------------


def _invalid(message: str) -> FakeReply:
    return error_reply(400, "invalid_request_error", message)


def validate_request(body: Any) -> FakeReply | None:
    """The 400 the real API would answer to this body, or None when it is valid."""
    if not isinstance(body, dict):
        return _invalid("request body must be a JSON object")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return _invalid(f"{name}: Field required")
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return _invalid("max_tokens: must be a positive integer")
    system = body.get("system", "")
    if not isinstance(system, str | list):
        return _invalid("system: Input should be a valid string or list")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return _invalid("messages: at least one message is required")
    for index, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            return _invalid(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            if not content.strip():
                return _invalid(f"messages.{index}: all messages must have non-empty content")
            continue
        if not isinstance(content, list) or not content:
            return _invalid(f"messages.{index}.content: must be a string or a non-empty list")
    if messages[0]["role"] != "user":
        return _invalid('messages: first message must use the "user" role')
    for index, message in enumerate(messages):
        content = message.get("content")
        if message["role"] != "assistant" or not isinstance(content, list):
            continue
        tool_ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
        if not tool_ids:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        results = []
        if following and isinstance(following.get("content"), list):
            results = [
                b.get("tool_use_id") for b in following["content"] if b.get("type") == "tool_result"
            ]
        missing = [tool_id for tool_id in tool_ids if tool_id not in results]
        if missing:
            return _invalid(
                f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
    uses_tools = any(
        isinstance(m.get("content"), list)
        and any(b.get("type") in ("tool_use", "tool_result") for b in m["content"])
        for m in messages
    )
    if uses_tools and not body.get("tools"):
        return _invalid(
            "Requests which include `tool_use` or `tool_result` blocks must define tools."
        )
    if body.get("tool_choice") and not body.get("tools"):
        return _invalid("tool_choice may only be specified while providing tools.")
    for index, tool in enumerate(body.get("tools") or []):
        if not TOOL_NAME.match(str(tool.get("name", ""))):
            return _invalid(
                f"tools.{index}.name: String should match pattern '{TOOL_NAME.pattern}'"
            )
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return _invalid(f"tools.{index}.input_schema.type: Input should be 'object'")
    return None


# --- Streaming ("stream": true) ---------------------------------------------------------


STREAM_CHUNK_CHARS = 8


def stream_events(message: dict) -> list[tuple[str, dict]]:
    """The server-sent events the Messages API streams for this message."""
    content = message.get("content", [])
    usage = message.get("usage", {})
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(content):
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            text = block["text"]
            deltas = [
                {"type": "text_delta", "text": text[i : i + STREAM_CHUNK_CHARS]}
                for i in range(0, len(text), STREAM_CHUNK_CHARS)
            ]
        else:  # tool_use: its input arrives as partial JSON
            first = {**block, "input": {}}
            raw = json.dumps(block["input"], ensure_ascii=False)
            half = len(raw) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (raw[:half], raw[half:])
            ]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": first},
            )
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# --- The server ----------------------------------------------------------------------------


class FakeAnthropic:
    """The fake server. ``start()`` returns self; ``url`` is the base URL for the SDK."""

    def __init__(self, *, api_key: str = FAKE_API_KEY) -> None:
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.handler: Callable[[dict], FakeReply | dict | str] | None = None
        self._queue: deque[FakeReply] = deque()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting -------------------------------------------------------------

    def script(self, *replies: FakeReply | dict | str) -> FakeAnthropic:
        with self._lock:
            self._queue.extend(self._as_reply(r) for r in replies)
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not served yet."""
        with self._lock:
            return len(self._queue)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.split("?")[0] == "/v1/messages"]

    @property
    def last(self) -> RecordedRequest:
        return self.message_requests[-1]

    @staticmethod
    def _as_reply(reply: FakeReply | dict | str) -> FakeReply:
        if isinstance(reply, FakeReply):
            return reply
        if isinstance(reply, str):
            return text_message(reply)
        if isinstance(reply, dict):
            return FakeReply(body=reply)
        raise TypeError(f"not a reply: {reply!r}")

    def _next_reply(self, body: dict) -> FakeReply:
        if self.handler is not None:
            return self._as_reply(self.handler(body))
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        # 400 rather than 500: the SDK does not retry it, so a test missing a
        # scripted reply fails at once with this message.
        return _invalid("fake Anthropic: no scripted reply left for this request")

    def _complete(self, reply: FakeReply, request: dict) -> FakeReply:
        """Fill what a real message has and a test need not write (id, model, usage)."""
        body = reply.body
        if reply.status != 200 or not body or body.get("type") != "message":
            return reply
        body = dict(body)
        body.setdefault("id", f"msg_fake_{next(_ids):06d}")
        body.setdefault("role", "assistant")
        body.setdefault("model", request.get("model", "claude-fake"))
        body.setdefault("stop_sequence", None)
        usage = dict(body.get("usage") or {})
        usage.setdefault(
            "input_tokens",
            _estimate_tokens(
                [request.get("system", ""), request.get("messages", []), request.get("tools", [])]
            ),
        )
        usage.setdefault("output_tokens", _estimate_tokens(body.get("content", [])))
        body["usage"] = usage
        return replace(reply, body=body)

    # --- life cycle --------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # quiet tests
                return

            def do_POST(self) -> None:
                fake._handle(self)

            def do_GET(self) -> None:
                fake._handle(self)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            # A short poll interval: stop() (shutdown) waits for one poll.
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # --- one request ----------------------------------------------------------------

    @staticmethod
    def _presented_key(headers: dict[str, str]) -> str:
        """The key of a request: x-api-key, or "Authorization: Bearer <key>" (the
        form anthropic 2.x sends an api_key in)."""
        if headers.get("x-api-key"):
            return headers["x-api-key"]
        scheme, _, token = headers.get("authorization", "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        length = int(http.headers.get("content-length") or 0)
        raw = http.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in http.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(http.command, http.path, headers, body))

        reply: FakeReply
        if http.command != "POST" or http.path.split("?")[0] != "/v1/messages":
            reply = error_reply(404, "not_found_error", f"Not found: {http.command} {http.path}")
        elif self._presented_key(headers) != self.api_key:
            reply = error_reply(401, "authentication_error", "invalid x-api-key")
        elif not headers.get("anthropic-version"):
            reply = _invalid("anthropic-version: header is required")
        else:
            reply = validate_request(body) or self._complete(self._next_reply(body), body)

        if reply.hang:
            self._release.wait(HANG_MAX_S)
            return  # the connection closes without a response
        if reply.delay_s:
            self._release.wait(reply.delay_s)
        if reply.status == 200 and reply.streamed and isinstance(body, dict) and body.get("stream"):
            self._send_stream(http, reply)
            return
        payload = json.dumps(reply.body or {}).encode()
        try:
            http.send_response(reply.status)
            http.send_header("content-type", "application/json")
            http.send_header("content-length", str(len(payload)))
            http.send_header("request-id", f"req_fake_{next(_ids):06d}")
            for name, value in reply.headers.items():
                http.send_header(name, value)
            http.end_headers()
            http.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): nothing to answer to

    def _send_stream(self, http: BaseHTTPRequestHandler, reply: FakeReply) -> None:
        """HTTP/1.1 chunked server-sent events, as the real API streams them."""

        def chunk(data: bytes) -> None:
            http.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            http.wfile.flush()

        events = stream_events(reply.body or {})
        cut = reply.cut_after_events is not None
        if cut:
            events = events[: reply.cut_after_events]
            if reply.cut_error:
                events.append(("error", reply.cut_error))
        try:
            http.protocol_version = "HTTP/1.1"
            http.send_response(200)
            http.send_header("content-type", "text/event-stream; charset=utf-8")
            http.send_header("cache-control", "no-cache")
            http.send_header("transfer-encoding", "chunked")
            http.send_header("connection", "close")
            http.send_header("request-id", f"req_fake_{next(_ids):06d}")
            http.end_headers()
            for name, data in events:
                chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            if not cut:  # a cut stream never sends its last chunk: the body is incomplete
                http.wfile.write(b"0\r\n\r\n")
                http.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def fake_anthropic(settings):
    """A started fake, with settings pointing the agent's client at it."""
    from agent.client import clients_reset

    server = FakeAnthropic().start()
    settings.ANTHROPIC_API_KEY = server.api_key
    settings.ANTHROPIC_BASE_URL = server.url
    settings.ANTHROPIC_MAX_RETRIES = 2
    settings.ANTHROPIC_TIMEOUT_S = 10.0
    # Not the settings' default: the SDK warns that claude-sonnet-4-5 is deprecated.
    settings.ANTHROPIC_MODEL = "claude-sonnet-4-6"
    yield server
    server.stop()
    clients_reset()
