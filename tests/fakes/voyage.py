"""A fake Voyage AI embeddings API on 127.0.0.1, speaking the real wire format.

``POST /v1/embeddings`` with ``{"input": [...], "model": ..., "input_type": ...,
"encoding_format": "base64" | null, ...}`` answers, like the real API::

    {"object": "list",
     "data": [{"object": "embedding", "embedding": [...] | "<base64 float32>", "index": 0}],
     "model": "voyage-3", "usage": {"total_tokens": N}}

and errors as ``{"detail": "..."}`` with the HTTP status. Replies can be scripted
(``fake.script(...)``): each request takes the next scripted reply, and once the
script is exhausted requests get the default successful answer. Every request is
recorded (``fake.requests``) with its JSON body, headers and arrival time.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import random
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def fake_vector(text: str, input_type: str | None, dimension: int) -> list[float]:
    """A deterministic unit vector for (input_type, text): the fake's "model"."""
    seed = hashlib.sha256(f"{input_type}\x00{text}".encode()).digest()
    rng = random.Random(seed)
    values = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def encode_base64(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


@dataclass
class Reply:
    """One scripted answer. ``body`` is bytes sent as is, or a callable building the
    JSON document from the request body; ``delay_s`` waits before answering."""

    status: int = 200
    body: bytes | Callable[[dict], Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    json: dict
    at: float


class FakeVoyage:
    def __init__(self, *, dimension: int = 1024, model: str = "voyage-3") -> None:
        self.dimension = dimension
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def success_document(self, request: dict, *, vectors: list | None = None) -> dict:
        """The real API's answer to ``request`` (``vectors`` overrides the embeddings)."""
        texts = request.get("input") or []
        if isinstance(texts, str):
            texts = [texts]
        if vectors is None:
            vectors = [fake_vector(t, request.get("input_type"), self.dimension) for t in texts]
        as_base64 = request.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "embedding": encode_base64(v) if as_base64 else v,
                "index": i,
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(max(1, len(t.split())) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": request.get("model", self.model),
            "usage": {"total_tokens": tokens},
        }

    def expected_vector(self, text: str, input_type: str) -> list[float]:
        return fake_vector(text, input_type, self.dimension)

    # -- server ------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeVoyage:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet tests
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with fake._lock:
                    fake.requests.append(
                        RecordedRequest(self.path, dict(self.headers), body, time.monotonic())
                    )
                    reply = fake._script.popleft() if fake._script else Reply()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if self.path.rstrip("/") != "/v1/embeddings":
                    reply = Reply(404, json.dumps({"detail": "Not Found"}).encode())
                if reply.body is None:
                    payload = json.dumps(fake.success_document(body)).encode()
                elif callable(reply.body):
                    payload = json.dumps(reply.body(body)).encode()
                else:
                    payload = reply.body
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                # The client may have given up (timeout tests).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeVoyage:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def error_reply(status: int, detail: str, headers: dict[str, str] | None = None) -> Reply:
    """An error as Voyage sends it: ``{"detail": ...}`` with the status."""
    return Reply(status, json.dumps({"detail": detail}).encode(), dict(headers or {}))
