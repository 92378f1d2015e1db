"""Serving the site does not load the MCP SDK: /mcp imports it on its first request."""

from __future__ import annotations

from tests.memory.test_workers import SETUP, _env, _python

HEAVY = {"mcp", "mcp_types", "a2wsgi", "starlette"}


def test_importing_the_urls_and_the_endpoint_loads_no_mcp_sdk(tmp_path):
    out = _python(
        SETUP
        + f"""
import sys
import makilab.urls, makilab.wsgi, memory.mcp.http  # noqa: F401
print(",".join(sorted({{name.split(".")[0] for name in sys.modules}} & {HEAVY!r})))
""",
        _env(tmp_path),
        timeout=120,
    )
    assert out.strip() == ""
