"""`manage.py mcp` over stdio: a real subprocess driven by the SDK's own stdio client.

The command runs on the embedded defaults (its own SQLite file, Qdrant Edge
folder and the bundled embedder) in a fresh data dir. Nothing but JSON-RPC may
reach stdout: a stray print would break the client's parsing at once.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from tests.memory.mcp import MCP_TOOLS
from tests.memory.mcp.test_mcp_http import INITIALIZE
from tests.memory.test_workers import ROOT, _env

pytestmark = pytest.mark.slow

FACT = {
    "key": "velo_mickael",
    "value": "Le vélo de Mickael est un Btwin gris acheté en 2021",
    "memory_type": "fact",
    "subjects": ["velo", "mickael"],
}
IDENTITY = {
    "key": "user_name",
    "value": "Le propriétaire s'appelle Mickael",
    "memory_type": "identity",
}


def _session(data_dir, steps):
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], cwd=str(ROOT), env=_env(data_dir)
    )

    async def main():
        async with Client(params, read_timeout_seconds=120) as client:
            return await steps(client)

    return asyncio.run(main())


def _text(result) -> str:
    return result.content[0].text


def test_a_client_remembers_searches_forgets_and_reads_resources_over_stdio(tmp_path):
    async def steps(client):
        out = {"tools": await client.list_tools()}
        out["remembered"] = await client.call_tool("remember", FACT)
        out["identity_remembered"] = await client.call_tool("remember", IDENTITY)
        out["text"] = await client.call_tool("search", {"query": "btwin", "mode": "text"})
        out["semantic"] = await client.call_tool(
            "search", {"query": "Quelle bicyclette possède Mickael ?", "mode": "semantic"}
        )
        out["hybrid"] = await client.call_tool(
            "search", {"query": "son vélo", "subjects": ["velo"], "limit": 3}
        )
        out["recent"] = await client.call_tool("recent", {"limit": 1})
        out["context"] = await client.call_tool(
            "context",
            {"message": "Tu te souviens de la marque de mon vélo ?", "channel": "whatsapp"},
        )
        out["preview"] = await client.call_tool("forget", {"topic": "Btwin"})
        out["still_there"] = await client.call_tool("search", {"query": "btwin", "mode": "text"})
        out["forgot"] = await client.call_tool(
            "forget", {"topic": "Btwin", "ids": out["preview"].structured_content["ids"]}
        )
        out["gone_text"] = await client.call_tool("search", {"query": "btwin", "mode": "text"})
        out["gone_semantic"] = await client.call_tool(
            "search", {"query": "Quelle bicyclette possède Mickael ?", "mode": "semantic"}
        )
        out["resources"] = await client.list_resources()
        out["identity"] = await client.read_resource("memory://facts/identity")
        out["settings"] = await client.read_resource("memory://settings")
        out["bad"] = await client.call_tool("search", {"query": "vélo", "mode": "fuzzy"})
        return out

    out = _session(tmp_path, steps)

    assert {t.name for t in out["tools"].tools} == MCP_TOOLS
    assert out["remembered"].structured_content["action"] == "added"
    assert out["remembered"].structured_content["fact"]["index_state"] == "indexed"  # inline task
    assert out["identity_remembered"].structured_content["fact"]["memory_type"] == "identity"

    def keys(name):
        result = out[name]
        assert not result.is_error, _text(result)
        return [hit.get("key") for hit in result.structured_content["results"]]

    assert keys("text") == ["velo_mickael"]
    assert keys("semantic")[0] == "velo_mickael"
    assert keys("hybrid") == ["velo_mickael"]  # the subjects filter leaves only that fact
    assert [f["key"] for f in out["recent"].structured_content["facts"]] == ["user_name"]
    context = out["context"].structured_content
    assert "Btwin" in context["prompt_block"]
    assert context["retrieval_id"] is not None

    preview = out["preview"].structured_content
    assert preview["dry_run"] is True
    assert preview["counts"]["facts"] == 1
    assert "Btwin" in preview["summary"]  # the owner sees what would go
    assert keys("still_there") == ["velo_mickael"]  # a dry run changes nothing
    forgot = out["forgot"].structured_content
    assert forgot["dry_run"] is False
    assert forgot["counts"]["facts"] == 1
    assert "Btwin" not in _text(out["forgot"])
    assert keys("gone_text") == []
    assert "velo_mickael" not in keys("gone_semantic")

    assert {str(r.uri) for r in out["resources"].resources} == {
        "memory://facts/identity",
        "memory://settings",
    }
    identity = json.loads(out["identity"].contents[0].text)
    assert [f["key"] for f in identity["facts"]] == ["user_name"]
    assert json.loads(out["settings"].contents[0].text)["auto_retrieve_enabled"] is True

    assert out["bad"].is_error
    assert _text(out["bad"]) == (
        "Entrée invalide pour search : mode : doit valoir 'semantic', 'text' ou 'hybrid'."
    )

    # The memory the subprocess wrote: the agent wrote it, the context call was logged.
    with sqlite3.connect(tmp_path / "makilab.sqlite3") as db:
        actors = {row[0] for row in db.execute("SELECT actor FROM memory_factrevision")}
        logged = db.execute("SELECT COUNT(*) FROM memory_retrievals").fetchone()[0]
    assert actors == {"agent"}
    assert logged == 1


def test_the_embedded_qdrant_folder_is_free_between_calls(tmp_path):
    """A `serve` started beside a running `manage.py mcp` must be able to open the folder."""

    async def steps(client):
        await client.call_tool("remember", FACT)
        await client.call_tool("search", {"query": "vélo", "mode": "semantic"})
        # The client still holds the subprocess open: try the folder from here.
        from memory.stores.vectors_edge import EdgeVectorStore

        store = EdgeVectorStore(tmp_path / "qdrant")
        try:
            return store.count("knowledge")
        finally:
            store.close()

    assert _session(tmp_path, steps) == 1


def test_a_script_that_closes_its_stdin_gets_an_answer_to_every_request(tmp_path):
    """Requests written in one go, then EOF: every request is answered before the exit.

    At EOF the SDK's dispatcher cancelled the handlers still running: a `remember`
    stored its fact, then its answer was dropped, and the client could not tell."""
    script = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "vélo", "mode": "text"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": FACT},
        },
    ]
    finished = subprocess.run(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env=_env(tmp_path),
        input="".join(json.dumps(message) + "\n" for message in script),  # then stdin closes
        capture_output=True,
        text=True,
        timeout=300,
    )

    answers = {answer.get("id"): answer for answer in map(json.loads, finished.stdout.splitlines())}
    assert sorted(answers, key=str) == [1, 2, 3], finished.stderr[-2000:]
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "serverInfo" in answers[1]["result"]
    assert answers[2]["result"]["isError"] is False, answers[2]
    remembered = answers[3]["result"]
    assert remembered["isError"] is False, remembered
    assert remembered["structuredContent"]["action"] == "added"
    with sqlite3.connect(tmp_path / "makilab.sqlite3") as db:
        stored = db.execute("SELECT value FROM core_memory WHERE key = ?", (FACT["key"],))
        assert stored.fetchall() == [(FACT["value"],)]
