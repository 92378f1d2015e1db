"""GET /api/memory/recent-facts: the recent facts our agent's and the MCP tools read too."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.tools import ToolContext, tool_run
from memory.mcp.tools import recent
from memory.models import Actor, Fact
from memory.services.facts import fact_forget, fact_store

pytestmark = pytest.mark.django_db

URL = "/api/memory/recent-facts"


@pytest.fixture
def facts():
    """Five facts updated a minute apart (newest last), one forgotten, one expired."""
    now = timezone.now()
    for i in range(5):
        fact = fact_store(key=f"fait_{i}", value=f"Le fait numéro {i}")[0]
        Fact.objects.filter(pk=fact.pk).update(updated_at=now - timedelta(minutes=10 - i))
    fact_forget(fact=Fact.objects.get(key="fait_3"), actor=Actor.USER)
    Fact.objects.filter(key="fait_3").update(updated_at=now)
    Fact.objects.filter(key="fait_1").update(expires_at=now - timedelta(seconds=1))
    return ["fait_4", "fait_2", "fait_0"]


def test_it_lists_the_active_facts_newest_first(agent_api, facts):
    response = agent_api.get(URL)

    assert response.status_code == 200
    assert [f["key"] for f in response.json()] == facts
    assert response.json()[0]["value"] == "Le fait numéro 4"


def test_limit_keeps_the_newest(agent_api, facts):
    assert [f["key"] for f in agent_api.get(URL, {"limit": 2}).json()] == facts[:2]


def test_the_agent_tool_and_the_mcp_tool_read_the_same_facts(agent_api, facts):
    api = [f["key"] for f in agent_api.get(URL, {"limit": 2}).json()]
    outcome = tool_run(
        name="memory__recent", tool_input={"limit": 2}, context=ToolContext(channel="whatsapp")
    )
    tool = [f["key"] for f in json.loads(outcome.content)["facts"]]
    mcp = [f["key"] for f in recent(limit=2)["facts"]]
    assert api == tool == mcp == facts[:2]


@pytest.mark.parametrize("limit", ["0", "51", "beaucoup"])
def test_a_bad_limit_is_a_french_400(agent_api, limit):
    response = agent_api.get(URL, {"limit": limit})
    assert response.status_code == 400
    assert response.json()["message"] == "Données invalides."
    assert "limit" in response.json()["extra"]["fields"]


def test_anonymous_reads_no_fact(anonymous_api, facts):
    response = anonymous_api.get(URL)
    assert response.status_code == 401
    assert "fait numéro" not in response.content.decode()
