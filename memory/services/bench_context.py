"""`benchmark context`: POST /api/memory/context over HTTP, beside its floor measured in the same run.

What an outside agent waits for, on a real waitress server (as `serve` runs it)
over a real socket: the request, the token's check, the pre-hook, its log row
(the answer carries its id), the JSON. Its floor is what no answer can avoid,
one query embedding, measured by the bare embedder on the same question after
the same pause, alternating with the requests (each side goes first every
other question) so the machine's load weighs on both alike.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memory.services.bench_data import bench_question, retrieval_seed
from memory.services.benchmarks import Timing


def context_benchmark(
    *, memories: int, queries: int, threads: int, out: Callable[[str], None], gap_ms: int = 0
) -> None:
    """POST /api/memory/context over HTTP, served by waitress as `serve` does, on a seeded memory.

    ``http`` is what an outside agent waits for (request, auth, retrieval, its
    log row, JSON); ``retrieval`` is the pre-hook's own total inside it, ``embed``
    its query embedding; ``embedding`` the floor: the bare query embedding of the
    same question. ``gap_ms``: a pause before each request and each floor
    embedding, as messages arrive: an engine idle since the last one does not run
    as one kept busy (local_engine.LOCAL_ENGINE_SPINCOUNT).
    """
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import override_settings
    from rest_framework.authtoken.models import Token

    from makilab.http_server import http_server_create
    from makilab.wsgi import application
    from memory.selectors import memory_stats_get
    from memory.services.retrieval import retrieval_warm
    from memory.services.retrieval.log import retrieval_logs_wait
    from memory.stores.embedders import get_embedder, query_cache
    from memory.stores.vectors import get_vector_store

    start = time.perf_counter()
    retrieval_seed(memories)
    get_vector_store().optimize()  # as serve does at start
    out(f"seeded {memories} memories in {time.perf_counter() - start:.1f} s")
    token = Token.objects.create(user=get_user_model().objects.create_user(username="benchmark"))
    retrieval_warm()  # as serve does before its first request
    embedder = get_embedder()
    server = http_server_create(
        application, host="127.0.0.1", port=0, threads=threads, ident="makilab-benchmark"
    )
    stop = threading.Event()

    def serve() -> None:
        # waitress's own run() loops until the process ends: poll until told to stop, each
        # poll as long as run()'s (asyncore_loop_timeout, 1 s). Polls every 50 ms woke this
        # thread during many an embedding (one takes 20 ms) and stalled the engine's team: the query
        # embedding's p95 after a 100 ms pause 44.8 ms against 29.9 (bare: 28.0, 26.7).
        while not stop.is_set():
            server.asyncore.loop(
                timeout=server.adj.asyncore_loop_timeout,
                map=server._map,
                use_poll=server.adj.asyncore_use_poll,
                count=1,
            )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = http.client.HTTPConnection("127.0.0.1", server.effective_port, timeout=30)
    headers = {"Authorization": f"Token {token.key}", "Content-Type": "application/json"}

    def post(message: str, channel: str) -> dict:
        client.request(
            "POST",
            "/api/memory/context",
            json.dumps({"message": message, "channel": channel}),
            headers,
        )
        response = client.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        return json.loads(body)

    http_ms, retrieval_ms, embed_ms, floor_ms, rest_ms = [], [], [], [], []
    failures = injected = 0

    def settle() -> None:
        """Before either side: the last log row written, then the pause."""
        retrieval_logs_wait()
        time.sleep(gap_ms / 1000)

    def floor(question: str) -> None:
        query_cache.clear()  # neither side is answered from the other's embedding
        settle()
        began = time.perf_counter()
        embedder.embed_query(question)
        floor_ms.append((time.perf_counter() - began) * 1000)
        query_cache.clear()

    # The endpoint is measured, not the API rate limit (600 calls a minute by default).
    unthrottled = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": dict.fromkeys(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]),
    }
    try:
        with override_settings(REST_FRAMEWORK=unthrottled):
            post("bonjour, on reprend ?", "whatsapp")  # first connection, not measured
            for i in range(queries):
                question = bench_question(i)
                if i % 2:
                    floor(question)
                settle()
                began = time.perf_counter()
                body = post(question, ("whatsapp", "mission_control")[i % 2])
                http_ms.append((time.perf_counter() - began) * 1000)
                if not i % 2:
                    floor(question)
                retrieval_ms.append(body["timings_ms"]["total"])
                if "embed" in body["timings_ms"]:
                    embed_ms.append(body["timings_ms"]["embed"])
                    rest_ms.append(http_ms[-1] - embed_ms[-1])
                failures += bool(body["failed_sources"])
                injected += bool(body["memories"])
    finally:
        stop.set()  # before the close, whose event ends the poll under way
        client.close()
        thread.join(timeout=5)
        server.task_dispatcher.shutdown()
        server.close()
    stats = memory_stats_get()
    points = stats["vectors"]["collections"]
    database = Path(connection.settings_dict["NAME"])
    size_mb = sum(f.stat().st_size for f in database.parent.glob(database.name + "*")) / 1e6
    out(
        f"data: {stats['messages']['total']} messages, {stats['facts']['total']} facts, "
        f"{stats['summaries']['total']} summaries; Qdrant points {points}; SQLite {size_mb:.1f} MB"
    )
    out(
        f"{queries} POST /api/memory/context over HTTP (waitress, {threads} threads), "
        f"{gap_ms} ms apart, {injected} injected something, {failures} with a failed source"
    )
    http_timing, retrieval_timing = Timing("http", http_ms), Timing("retrieval", retrieval_ms)
    out(http_timing.line())
    out(retrieval_timing.line())
    if embed_ms:  # none when every question was stopped before its embedding
        out(Timing("embed", embed_ms).line())
        out(Timing("rest", rest_ms).line() + "  (http minus the call's own query embedding)")
    embedding = Timing("embedding", floor_ms)
    out(embedding.line() + f"  (bare query embedding {gap_ms} ms after the last, floor)")
    for timing in (http_timing, retrieval_timing):
        out(
            f"ratio     {timing.name} / embedding: p50 {timing.ratio(embedding, 50):.2f}x  "
            f"p95 {timing.ratio(embedding, 95):.2f}x"
        )
