"""An agent restating a fact whose value the owner set is told the owner's value stays.

The owner's value always won, but the agent's tools answered « Déjà connu, rien n'a
changé » (MCP) or a bare "noop" (our agent's memory__store_fact): the model, told it
already knew its own different value, would tell the owner it was noted.
"""

from __future__ import annotations

import json

import pytest

from agent.tools import ToolContext, tool_run
from memory.mcp import tools as mcp_tools
from memory.models import Actor, Fact
from memory.services.fact_ownership import OWNER_KEPT_MESSAGE
from memory.services.facts import fact_store, fact_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def owners_job(vector_store, local_embedder):
    fact, _ = fact_store(key="user_job", value="Développeur chez Makilab", actor=Actor.AGENT)
    return fact_update(fact=fact, actor=Actor.USER, value="Ingénieur logiciel chez Makilab")


def test_the_mcp_remember_tool_says_the_owners_value_is_kept(owners_job):
    answer = mcp_tools.remember(key="user_job", value="Stagiaire chez Makilab")

    assert Fact.objects.get(key="user_job").value == "Ingénieur logiciel chez Makilab"
    assert answer["owner_kept"] is True
    assert answer["message"] == OWNER_KEPT_MESSAGE.format(
        key="user_job", value="Ingénieur logiciel chez Makilab"
    )


def test_our_agents_store_fact_tool_says_the_owners_value_is_kept(owners_job):
    context = ToolContext(channel="mission_control", message_ids=())
    outcome = tool_run(
        name="memory__store_fact",
        tool_input={"key": "user_job", "value": "Stagiaire chez Makilab"},
        context=context,
    )
    body = json.loads(outcome.content)

    assert not outcome.is_error, body
    assert body["owner_kept"] is True
    assert body["message"] == OWNER_KEPT_MESSAGE.format(
        key="user_job", value="Ingénieur logiciel chez Makilab"
    )
    assert body["fact"]["value"] == "Ingénieur logiciel chez Makilab"


def test_restating_the_owners_own_value_is_no_conflict(owners_job):
    answer = mcp_tools.remember(key="user_job", value="Ingénieur logiciel chez Makilab")
    assert "owner_kept" not in answer
    assert answer["action"] == "noop"


def test_a_fact_the_owner_never_touched_is_updated_as_before(vector_store, local_embedder):
    fact_store(key="user_city", value="Lyon", actor=Actor.AGENT)
    answer = mcp_tools.remember(key="user_city", value="Bordeaux")
    assert "owner_kept" not in answer
    assert Fact.objects.get(key="user_city").value == "Bordeaux"


def test_both_tools_say_the_owners_importance_and_type_are_kept(owners_job):
    """The owner's value, restated as it is, with another importance and type: the owner
    set those too, and the tools said nothing of them (the owner's were kept)."""
    fact_update(fact=owners_job, actor=Actor.USER, importance=0.9, memory_type="identity")
    kept = (
        "Fixé par le propriétaire, conservé pour user_job : importance 0,9 ; "
        "type « Identité ». Votre changement n'a pas été enregistré."
    )
    value = "Ingénieur logiciel chez Makilab"

    answer = mcp_tools.remember(key="user_job", value=value, importance=0.1, memory_type="fact")
    outcome = tool_run(
        name="memory__store_fact",
        tool_input={"key": "user_job", "value": value, "importance": 0.1, "type": "fact"},
        context=ToolContext(channel="mission_control", message_ids=()),
    )

    assert (answer["owner_kept"], answer["message"]) == (True, kept)
    body = json.loads(outcome.content)
    assert (body["owner_kept"], body["message"]) == (True, kept)
    fact = Fact.objects.get(key="user_job")
    assert (fact.importance, fact.memory_type) == (0.9, "identity")
