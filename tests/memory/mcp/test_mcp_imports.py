"""Serving the site does not load the MCP SDK: /mcp imports it on its first request."""

from __future__ import annotations

import subprocess
import sys

from tests.memory.test_workers import ROOT

SCRIPT = """
import sys
import django
django.setup()
import makilab.urls, makilab.wsgi, memory.mcp.http  # noqa: F401
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"mcp", "mcp_types", "a2wsgi", "starlette"})
print(",".join(heavy))
"""


def test_importing_the_urls_and_the_endpoint_loads_no_mcp_sdk():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "tests.settings", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
