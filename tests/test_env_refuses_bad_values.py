"""Production variables with a bad value stop start-up with a clear error naming the
variable (as env_bool and env_int do), instead of starting and failing later, deep inside
a task: a URL without a usable scheme, host or port, a broker kombu cannot resolve, a
timeout that is not a finite number above 0, an unknown Voyage model, a log level."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PREFIXES = ("DJANGO_", "MAKILAB_", "QDRANT_", "VOYAGE_", "CELERY_", "ANTHROPIC_")


def manage_run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``manage.py *args`` in a fresh data dir, with none of the project's variables set
    but ``env`` (an empty .env file: the developer's own is not read)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    empty = tmp_path / "empty.env"
    empty.touch()
    environ |= {
        "DJANGO_SETTINGS_MODULE": "makilab.settings",
        "MAKILAB_DATA_DIR": str(tmp_path),
        "MAKILAB_ENV_FILE": str(empty),
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environ | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _manage_check(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return manage_run(tmp_path, "check", **env)


@pytest.mark.parametrize(
    "env",
    [
        {"QDRANT_URL": "http://localhost:abc"},  # urllib3 LocationParseError at first use
        {"QDRANT_URL": "ftp://qdrant.example"},  # "Unknown scheme" at first use
        {"CELERY_BROKER_URL": "redis//localhost:6379/0"},  # kombu: an amqp host "redis//..."
        {"CELERY_BROKER_URL": "foo://localhost"},  # kombu KeyError at every publish
        {"QDRANT_TIMEOUT_S": "nan"},  # math.ceil(nan) when the store opens
        {"VOYAGE_TIMEOUT_S": "0"},  # requests refuses it: every row would end failed
        {"VOYAGE_TIMEOUT_S": "-1"},
        {"ANTHROPIC_TIMEOUT_S": "nan"},
        {"VOYAGE_API_KEY": "pa-test", "VOYAGE_MODEL": "voyage-99"},  # dimension unknown
        {"MAKILAB_LOG_LEVEL": "verbose"},
        # QA: accepted, then every note read failed (« UnsupportedProtocol »).
        {"OBSIDIAN_API_URL": "127.0.0.1:27124"},
        {"OBSIDIAN_API_URL": "https://:27124"},
        {"OBSIDIAN_API_URL": "https://127.0.0.1:abc"},
        {"OBSIDIAN_TIMEOUT_S": "0"},
        {"AGENT_COALESCE_SECONDS": "-1"},
        # Never the peer's address: no header kept (serve listens on TCP only).
        {"MAKILAB_BEHIND_PROXY": "1", "MAKILAB_TRUSTED_PROXY": "notanip"},
        {"MAKILAB_BEHIND_PROXY": "1", "MAKILAB_TRUSTED_PROXY": "localhost"},
    ],
    ids=lambda env: "=".join(list(env.items())[-1]),
)
def test_a_bad_production_value_stops_start_up_naming_the_variable(tmp_path, env):
    name = list(env)[-1]

    result = _manage_check(tmp_path, **env)

    assert result.returncode != 0, f"{env} accepted at start: {result.stdout}"
    assert re.search(rf"^Configuration invalide : {name} (doit|désigne) ", result.stderr, re.M)


def test_the_good_production_values_start(tmp_path):
    result = _manage_check(
        tmp_path,
        QDRANT_URL="https://admin:pw@qdrant.example:6333",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        VOYAGE_API_KEY="pa-test",
        VOYAGE_MODEL="voyage-3-lite",
        VOYAGE_TIMEOUT_S="2.5",
        MAKILAB_LOG_LEVEL="warning",
        OBSIDIAN_API_URL="https://127.0.0.1:27124",
        OBSIDIAN_TIMEOUT_S="2.5",
        AGENT_COALESCE_SECONDS="0",
        MAKILAB_BEHIND_PROXY="1",
        MAKILAB_TRUSTED_PROXY="::1",
    )

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("proxy", "kept"), [("*", "*"), ("10.0.0.7", "10.0.0.7"), ("0:0:0:0:0:0:0:1", "::1")]
)
def test_a_trusted_proxy_is_kept_as_waitress_compares_it(monkeypatch, proxy, kept):
    """waitress compares the peer's address with it as text: written otherwise, an IPv6
    address never matched (review)."""
    from makilab.env import env_proxy

    monkeypatch.setenv("PROXY_VAR", proxy)
    assert env_proxy("PROXY_VAR", "127.0.0.1") == kept


def test_a_left_over_proxy_value_stops_nothing_when_not_behind_one(tmp_path):
    assert _manage_check(tmp_path, MAKILAB_TRUSTED_PROXY="nginx").returncode == 0
