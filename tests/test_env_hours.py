"""MAKILAB_DIGEST_HOURS: the digest's fixed hours, read strictly."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from makilab.env import env_hours

DEFAULT = [2, 6, 10, 14, 18, 22]


def test_hours_are_read_sorted_and_distinct(monkeypatch):
    monkeypatch.setenv("MAKILAB_DIGEST_HOURS", "22, 6,6,10")
    assert env_hours("MAKILAB_DIGEST_HOURS", DEFAULT) == [6, 10, 22]
    monkeypatch.delenv("MAKILAB_DIGEST_HOURS")
    assert env_hours("MAKILAB_DIGEST_HOURS", DEFAULT) == DEFAULT


@pytest.mark.parametrize("raw", ["24", "-1", "2h", ",", "deux"])
def test_a_bad_hour_stops_start_up_with_the_variable_name(monkeypatch, raw):
    monkeypatch.setenv("MAKILAB_DIGEST_HOURS", raw)
    with pytest.raises(ImproperlyConfigured, match="MAKILAB_DIGEST_HOURS"):
        env_hours("MAKILAB_DIGEST_HOURS", DEFAULT)
