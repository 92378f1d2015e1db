"""The MCP server's tests, over the real MCP SDK client (stdio and streamable HTTP)."""

import subprocess
import sys

# Every tool the server lists, whichever transport a client uses.
MCP_TOOLS = {
    "search",
    "remember",
    "forget",
    "recent",
    "context",
    "self_search",
    "self_remember",
    "self_forget",
}


def mcp_stdio_started(data_dir, *, text: bool = False) -> subprocess.Popen:
    """`manage.py mcp` started on ``data_dir``, its input and output piped, its log dropped."""
    from tests.memory.test_workers import ROOT, _env

    return subprocess.Popen(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env=_env(data_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=text,
    )
