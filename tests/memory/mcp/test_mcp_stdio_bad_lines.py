"""`manage.py mcp` over stdio answers a line that is not a JSON-RPC message with JSON-RPC's
parse error (a null id, a French message) and keeps serving; the SDK dropped the line
without a word, and a client waited for an answer that never came."""

from __future__ import annotations

import json
import select
import subprocess
import sys

import pytest

from memory.mcp.transport_errors import (
    NOT_JSON_MESSAGE,
    NOT_JSON_RPC_MESSAGE,
    UNKNOWN_METHOD_MESSAGE,
)
from tests.memory.mcp import mcp_stdio_started
from tests.memory.mcp.test_mcp_http import INITIALIZE
from tests.memory.test_workers import ROOT, _env

pytestmark = pytest.mark.slow


def _answer(process: subprocess.Popen, timeout: float = 120) -> dict:
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "no answer on stdout"
    return json.loads(process.stdout.readline())


def _send(process: subprocess.Popen, line: str) -> None:
    process.stdin.write(line + "\n")
    process.stdin.flush()


def test_a_bad_line_gets_a_french_parse_error_and_the_server_goes_on(tmp_path):
    process = mcp_stdio_started(tmp_path, text=True)
    try:
        _send(process, "garbage{")
        assert _answer(process) == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": NOT_JSON_MESSAGE},
        }
        _send(process, "[1, 2]")
        refused = _answer(process)
        assert (refused["id"], refused["error"]["message"]) == (None, NOT_JSON_RPC_MESSAGE)
        _send(process, json.dumps(INITIALIZE))
        answer = _answer(process)
        assert answer["id"] == 1 and "serverInfo" in answer["result"], answer
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def test_a_request_before_initialize_and_an_unknown_method_are_refused_in_french(tmp_path):
    """Review: over stdio the SDK answered « Invalid request parameters » (a tool called
    before `initialize`) and « Method not found », in English (HTTP says them in French)."""
    script = [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},  # before initialize
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/frobnicate"},
    ]
    finished = subprocess.run(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env=_env(tmp_path),
        input="".join(json.dumps(message) + "\n" for message in script),
        capture_output=True,
        text=True,
        timeout=300,
    )

    answers = {a.get("id"): a for a in map(json.loads, finished.stdout.splitlines())}
    early, unknown = answers[7]["error"], answers[8]["error"]
    assert (early["code"], unknown["code"]) == (-32602, -32601)
    assert "initialize" in early["message"] and "Paramètres invalides" in early["message"], early
    assert unknown["message"] == UNKNOWN_METHOD_MESSAGE.format(method="tools/frobnicate")
