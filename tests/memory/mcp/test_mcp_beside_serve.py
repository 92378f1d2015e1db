"""The real `manage.py serve` (waitress, embedded defaults) serves MCP at /mcp, and
`manage.py mcp` over stdio works beside it on the same memory.

The embedded Qdrant folder belongs to serve: the stdio process cannot open it,
so its semantic search answers with the text results and a French notice, its
writes land in SQLite (shared) and wait, pending, for serve's indexing; serve
keeps its store and its semantic search throughout.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import time

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.memory.test_workers import (
    MIGRATE,
    ROOT,
    SETUP,
    _env,
    _free_port,
    _python,
    _start_serve,
    _wait_serving,
)

pytestmark = pytest.mark.slow

BIKE = {"key": "velo_mickael", "value": "Le vélo de Mickael est un Btwin gris acheté en 2021"}
PIANO = {"key": "piano_lea", "value": "Léa prend des cours de piano le mercredi"}
BIKE_QUESTION = "Quelle bicyclette possède Mickael ?"
SPEAKS = {"category": "context", "content": "Je parle français avec Mickael"}
SPEAKS_AGAIN = {"category": "context", "content": "Je parle le français avec Mickael"}


def _token(env) -> str:
    return _python(
        SETUP
        + """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
agent = get_user_model().objects.create_user(username="agent")
print(Token.objects.create(user=agent).key)
""",
        env,
    ).strip()


async def _over_http(url: str, token: str, steps):
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return await steps(client)


async def _over_stdio(env, steps):
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], cwd=str(ROOT), env=env
    )
    async with Client(params, read_timeout_seconds=120) as client:
        return await steps(client)


async def _semantic_keys(client, query: str) -> list[str]:
    result = await client.call_tool("search", {"query": query, "mode": "semantic"})
    assert not result.is_error, result.content[0].text
    return [hit.get("key") for hit in result.structured_content["results"]]


def test_serve_answers_mcp_over_http_and_stdio_works_beside_it(tmp_path):
    env = _env(tmp_path)
    _python(MIGRATE, env)
    token = _token(env)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = _start_serve(env, port, "--no-migrate")
    try:
        _wait_serving(base, server)

        async def remember_then_find(client):
            remembered = await client.call_tool("remember", BIKE)
            await client.call_tool("self_remember", SPEAKS)
            deadline = time.monotonic() + 60  # serve's worker indexes it in the background
            while time.monotonic() < deadline:
                if BIKE["key"] in await _semantic_keys(client, BIKE_QUESTION):
                    return remembered, True
                await asyncio.sleep(0.5)
            return remembered, False

        remembered, found = asyncio.run(_over_http(f"{base}/mcp", token, remember_then_find))
        assert remembered.structured_content["action"] == "added"
        assert found, "serve never indexed the fact remembered over HTTP"

        async def beside(client):
            semantic = await client.call_tool("search", {"query": BIKE_QUESTION})
            text = await client.call_tool("search", {"query": "btwin", "mode": "text"})
            piano = await client.call_tool("remember", PIANO)
            # The agent says again what it said over HTTP: its items are compared on the
            # spot (this process cannot search serve's folder), never stored twice.
            speaks = await client.call_tool("self_remember", SPEAKS_AGAIN)
            return semantic, text, piano, speaks

        semantic, text, piano, speaks = asyncio.run(_over_stdio(env, beside))
        assert not speaks.is_error, speaks.content
        assert speaks.structured_content["action"] != "added"
        with sqlite3.connect(tmp_path / "makilab.sqlite3", timeout=20) as db:
            selves = db.execute(
                "SELECT value FROM core_memory WHERE kind = 'self' AND forgotten = 0"
            ).fetchall()
        assert len(selves) == 1, selves
        assert not semantic.is_error
        assert semantic.structured_content["mode"] == "text"
        assert semantic.structured_content["notice"].startswith(
            "La recherche sémantique est indisponible"
        )
        assert [h["key"] for h in text.structured_content["results"]] == [BIKE["key"]]
        assert piano.structured_content["action"] == "added"
        assert piano.structured_content["fact"]["index_state"] == "pending"  # serve will index it

        async def after(client):
            piano_text = await client.call_tool("search", {"query": "piano", "mode": "text"})
            return piano_text, await _semantic_keys(client, BIKE_QUESTION)

        piano_text, bike_semantic = asyncio.run(_over_http(f"{base}/mcp", token, after))
        assert [h["key"] for h in piano_text.structured_content["results"]] == [PIANO["key"]]
        assert bike_semantic[0] == BIKE["key"]  # serve kept its store
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    assert server.returncode == 0, out[-3000:]
