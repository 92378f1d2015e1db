"""The retention of the logs is a number of days the daily purge can subtract from now:
"None" (env_int's "no value") and a span past the calendar stop start-up, naming the
variable, instead of crashing the purge every day (timedelta(days=None), OverflowError)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from makilab.env import env_int
from tests.memory.test_workers import ROOT, _env


@pytest.mark.parametrize(
    ("name", "raw", "said"),
    [
        ("MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS", "None", "doit être un nombre entier, pas 'None'"),
        ("MAKILAB_LLM_USAGE_RETENTION_DAYS", "36501", "doit être au plus 36500, pas 36501"),
    ],
)
def test_a_retention_of_none_or_past_a_century_stops_start_up(tmp_path, name, raw, said):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=_env(tmp_path, **{name: raw}),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0, f"{name}={raw} accepted at start: {result.stdout}"
    assert f"Configuration invalide : {name} {said}." in result.stderr


def test_env_int_can_refuse_none_and_bound_the_value_above(monkeypatch):
    monkeypatch.setenv("N", "none")
    with pytest.raises(ImproperlyConfigured, match="N doit être un nombre entier, pas 'none'"):
        env_int("N", 5, allow_none=False)
    monkeypatch.setenv("N", "11")
    with pytest.raises(ImproperlyConfigured, match="N doit être au plus 10, pas 11"):
        env_int("N", 5, maximum=10)
    monkeypatch.setenv("N", "10")
    assert env_int("N", 5, maximum=10, allow_none=False) == 10
