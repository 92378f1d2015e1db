"""A Qdrant server (QDRANT_URL) keeps the same int8 copy as the embedded shards.

Tested on the wire: qdrant-client's real REST calls against a fake Qdrant on
127.0.0.1 that answers in Qdrant's JSON and records what it was sent. The
search itself (the copy walked, the hits ranked again on the stored vectors) is
the engine's, tested on Qdrant Edge in tests/memory/test_search_index.py.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory.stores.vectors import (
    CONVERSATIONS,
    INT8_OVERSAMPLING,
    INT8_QUANTILE,
    KNOWLEDGE,
)
from memory.stores.vectors_server import ServerVectorStore

INT8_COPY = {"scalar": {"type": "int8", "quantile": INT8_QUANTILE, "always_ram": True}}


class FakeQdrant:
    """Collections by name ({"size": n, "quantization": dict | None}) and every request
    answered, as (method, path, JSON body)."""

    def __init__(self) -> None:
        self.collections: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict | None]] = []
        self.failing = False  # every request answered 503

    def sent(self, method: str, path: str) -> list[dict | None]:
        return [body for m, p, body in self.requests if m == method and p == path]

    def info(self, name: str) -> dict:
        collection = self.collections[name]
        return {
            "status": "green",
            "optimizer_status": "ok",
            "points_count": 0,
            "segments_count": 1,
            "payload_schema": {},
            "config": {
                "params": {"vectors": {"size": collection["size"], "distance": "Cosine"}},
                "hnsw_config": {"m": 16, "ef_construct": 100, "full_scan_threshold": 10000},
                "optimizer_config": {"default_segment_number": 0, "flush_interval_sec": 5},
                "wal_config": {"wal_capacity_mb": 32, "wal_segments_ahead": 0},
                "quantization_config": collection["quantization"],
            },
        }

    def answer(self, method: str, path: str, body: dict | None):
        self.requests.append((method, path, body))
        match = re.fullmatch(r"/collections/(\w+)(/.*)?", path)
        name, rest = (match.group(1), match.group(2) or "") if match else ("", "")
        if method == "GET" and rest == "/exists":
            return {"exists": name in self.collections}
        if method == "GET" and rest == "":
            return self.info(name) if name in self.collections else None
        if method == "PUT" and rest == "":
            self.collections[name] = {
                "size": body["vectors"]["size"],
                "quantization": body.get("quantization_config"),
            }
            return True
        if method == "PATCH" and rest == "":
            if "quantization_config" in body:
                self.collections[name]["quantization"] = body["quantization_config"]
            return True
        if method == "PUT" and rest == "/index":
            return {"operation_id": 1, "status": "completed"}
        if method == "POST" and rest == "/points/query":
            return {"points": []}
        raise AssertionError(f"unexpected request {method} {path}")


@pytest.fixture
def fake_qdrant():
    fake = FakeQdrant()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            path = self.path.split("?")[0]
            if fake.failing:
                status, payload = 503, b'{"status": {"error": "Service Unavailable"}}'
            else:
                result = fake.answer(self.command, path, body)
                status = 404 if result is None else 200
                payload = json.dumps(
                    {"result": result, "status": "ok", "time": 0.0}
                    if result is not None
                    else {"status": {"error": f"Not found: Collection `{path}` doesn't exist!"}}
                ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_PATCH = _reply

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def test_a_collection_created_on_a_server_keeps_an_int8_copy_and_searches_rank_again(
    fake_qdrant,
):
    store = ServerVectorStore(fake_qdrant.url, "", 2.0)
    store.ensure_collection(CONVERSATIONS, 4)
    (created,) = fake_qdrant.sent("PUT", f"/collections/{CONVERSATIONS}")
    assert created["quantization_config"] == INT8_COPY

    store.search(CONVERSATIONS, [1.0, 0.0, 0.0, 0.0], limit=16)
    (query,) = fake_qdrant.sent("POST", f"/collections/{CONVERSATIONS}/points/query")
    assert query["params"]["quantization"] == {
        "rescore": True,
        "oversampling": INT8_OVERSAMPLING,
    }


def test_the_upkeep_gives_a_server_collection_created_before_the_copy_its_int8_copy_once(
    fake_qdrant,
):
    fake_qdrant.collections[CONVERSATIONS] = {"size": 4, "quantization": None}  # an earlier one
    fake_qdrant.collections[KNOWLEDGE] = {"size": 4, "quantization": INT8_COPY}
    store = ServerVectorStore(fake_qdrant.url, "", 2.0)

    store.optimize(min_unindexed=5000)
    (patched,) = fake_qdrant.sent("PATCH", f"/collections/{CONVERSATIONS}")
    assert patched["quantization_config"] == INT8_COPY
    assert fake_qdrant.sent("PATCH", f"/collections/{KNOWLEDGE}") == []  # it has it

    store.optimize(min_unindexed=5000)
    assert len(fake_qdrant.sent("PATCH", f"/collections/{CONVERSATIONS}")) == 1  # once


def test_the_upkeep_of_a_server_that_fails_asks_again_at_the_next_pass(fake_qdrant, caplog):
    """The periodic task never fails on a server that answers errors: it asks again next
    time."""
    fake_qdrant.collections[CONVERSATIONS] = {"size": 4, "quantization": None}
    store = ServerVectorStore(fake_qdrant.url, "", 2.0)

    fake_qdrant.failing = True
    assert store.optimize(min_unindexed=5000) == {}
    assert "postponed" in caplog.text
    assert fake_qdrant.sent("PATCH", f"/collections/{CONVERSATIONS}") == []

    fake_qdrant.failing = False
    store.optimize(min_unindexed=5000)
    (patched,) = fake_qdrant.sent("PATCH", f"/collections/{CONVERSATIONS}")
    assert patched["quantization_config"] == INT8_COPY
