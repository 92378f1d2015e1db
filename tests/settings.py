"""Test settings: the real settings, on a throw-away data dir, with no production keys.

Integration variables are removed so a developer's shell can never make the
tests talk to a real Qdrant, Voyage, Anthropic or Obsidian; tests that need
one point the setting at a local fake server explicitly.
"""

import os
import tempfile
from pathlib import Path

os.environ["MAKILAB_DATA_DIR"] = tempfile.mkdtemp(prefix="makilab-tests-")
# A developer's .env must not reach the tests: point the settings at an empty file.
os.environ["MAKILAB_ENV_FILE"] = os.path.join(os.environ["MAKILAB_DATA_DIR"], "empty.env")
Path(os.environ["MAKILAB_ENV_FILE"]).touch()
for _name in (
    "VOYAGE_API_KEY",
    "VOYAGE_BASE_URL",
    "QDRANT_URL",
    "QDRANT_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "CELERY_BROKER_URL",
    "OBSIDIAN_API_URL",
    "OBSIDIAN_API_KEY",
    "OBSIDIAN_VAULT_PATH",
    "DJANGO_SECRET_KEY",
    "DJANGO_DEBUG",
):
    os.environ.pop(_name, None)
    os.environ.pop(f"{_name}_FILE", None)
# No API throttling in the suite (one cache, the same user ids test after test),
# nor in the services the tests start (`serve` subprocesses inherit this
# environment); tests/test_throttling.py turns it on with its own rates.
for _name in ("MAKILAB_API_RATE", "MAKILAB_API_ANON_RATE", "MAKILAB_API_CHAT_RATE"):
    os.environ[_name] = "None"

from makilab.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Every retrieval source gets a generous time limit in the suite: on two busy workers a
# source cut by its production limit (1 s for the semantic one) looks like a source that
# found nothing, and a test about what retrieval finds fails on the hour's load. Tests
# about the limits themselves set the limit they exercise.
RETRIEVAL_TIMEOUTS_MS = dict.fromkeys(RETRIEVAL_TIMEOUTS_MS, 60_000)  # noqa: F405
