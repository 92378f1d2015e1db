"""The MCP client configurations README gives are valid JSON naming what really exists."""

from __future__ import annotations

import json
import re

from django.urls import resolve

from tests.memory.test_workers import ROOT


def _snippets() -> list[dict]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## MCP server", 1)[1].split("\n## ", 1)[0]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", section, re.S)]


def test_the_stdio_and_http_snippets_parse_and_point_at_the_real_command_and_url():
    stdio, http = (snippet["mcpServers"]["makilab-memory"] for snippet in _snippets())
    assert stdio["args"][-2:][0].endswith("manage.py")
    assert stdio["args"][-1] == "mcp"
    assert (ROOT / "memory/management/commands/mcp.py").exists()
    assert http["type"] == "http"
    assert resolve(http["url"].split("8000", 1)[1]).url_name == "mcp"
    assert http["headers"]["Authorization"].startswith("Bearer ")
