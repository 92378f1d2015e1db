"""MCP `remember` says a version no read returns is not a version, instead of « Ce fait a
changé depuis » (QA: « garbage », « 2026-02-30… »)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.fact_revisions import fact_version
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "version", ["garbage", "2026-02-30T10:00:00+00:00", "2026-11-30T10:00:00", "12"]
)
def test_a_malformed_version_is_said_to_be_one(mcp, settings, version):
    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)
    result = mcp("remember", {"key": "velo", "value": "un vélo vert", "version": version})
    assert result.is_error
    said = result.content[0].text
    assert "n'est pas une version de fait" in said and "a changé" not in said, said
    assert Fact.objects.get(key="velo").value == "un vélo bleu"


def test_the_version_a_read_returns_still_writes(mcp, settings):
    settings.ANTHROPIC_API_KEY = ""
    fact, _ = fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)
    result = mcp(
        "remember", {"key": "velo", "value": "un vélo vert", "version": fact_version(fact)}
    )
    assert not result.is_error, result.content[0].text
    assert Fact.objects.get(key="velo").value == "un vélo vert"
