"""QA: a restatement that states no type resets the fact's type to « fact».

README: « restating a fact changes only what the restatement states ». The agent's tool
memory__store_fact (agent/tools_memory.py store_fact_run: ``tool_input.get("type",
MemoryType.FACT)``) and the extraction (agent/extraction.py candidate_from:
``item.get("type", MemoryType.FACT)``) pass type « fact » when the LLM gave none, so
fact_store treats it as stated and overwrites the stored type (the API and MCP
``remember`` leave it unstated). An identity fact the agent learnt, whose value the owner
then corrected, loses its identity type (and its place in the prompt's identity section).
"""

import json

import pytest

from agent.extraction import fact_candidate_store, facts_parse
from agent.tools import ToolContext, tool_run
from memory.models import Actor, Fact
from memory.services.facts import fact_store, fact_update

pytestmark = pytest.mark.django_db


@pytest.fixture
def identity_fact():
    """The agent learnt the owner's name as an identity fact; the owner corrected the value."""
    fact, _ = fact_store(
        key="user_name", value="Mickael", memory_type="identity", actor=Actor.AGENT
    )
    return fact_update(fact=fact, actor=Actor.USER, value="Mickaël Dupont")


def test_the_store_fact_tool_without_a_type_keeps_the_stored_type(identity_fact):
    outcome = tool_run(
        name="memory__store_fact",
        tool_input={"key": "user_name", "value": "Mickaël Dupont", "subjects": ["mickael"]},
        context=ToolContext(channel="mission_control"),
    )
    assert not outcome.is_error, outcome.content
    fact = Fact.objects.get(pk=identity_fact.pk)
    assert fact.subjects == ["mickael"]  # what it stated was written
    assert fact.memory_type == "identity", json.loads(outcome.content)


def test_an_extracted_restatement_without_a_type_keeps_the_stored_type(identity_fact):
    [candidate], _ = facts_parse({"facts": [{"key": "user_name", "value": "Mickaël Dupont"}]})
    fact_candidate_store(candidate, channel="mission_control", source_message_id=None)
    assert Fact.objects.get(pk=identity_fact.pk).memory_type == "identity"


def test_a_new_fact_stated_without_a_type_is_a_fact():
    [candidate], _ = facts_parse({"facts": [{"key": "ville", "value": "Mickael vit à Lyon"}]})
    fact_candidate_store(candidate, channel="mission_control", source_message_id=None)
    outcome = tool_run(
        name="memory__store_fact",
        tool_input={"key": "sport", "value": "Mickael fait de l'escalade"},
        context=ToolContext(channel="mission_control"),
    )
    assert not outcome.is_error, outcome.content
    assert dict(Fact.objects.values_list("key", "memory_type")) == {
        "ville": "fact",
        "sport": "fact",
    }
