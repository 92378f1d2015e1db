"""memory__store_fact and memory__index refuse a NUL character as every other writer does
(the model's value rule, with Django's message): the API, MCP and self tools already did."""

import json

import pytest
from django.core.validators import ProhibitNullCharactersValidator

from agent.tools import ToolContext, tool_run
from memory.models import Fact
from memory.services.forgetting import topic_forget
from memory.services.messages import message_save

pytestmark = pytest.mark.django_db

NUL_MESSAGE = str(ProhibitNullCharactersValidator.message)


@pytest.fixture
def context(vector_store, local_embedder):
    request = message_save(channel="mission_control", role="user", content="(la demande)")
    return ToolContext(channel="mission_control", message_ids=(request.id,))


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("memory__store_fact", {"key": "marie_ville", "value": "Marie\x00 habite à Lyon"}),
        ("memory__index", {"text": "Marie\x00 habite à Lyon"}),
    ],
)
def test_a_nul_in_a_tools_text_is_a_french_tool_error_as_on_every_other_path(
    name, tool_input, context
):
    outcome = tool_run(name=name, tool_input=tool_input, context=context)
    assert outcome.is_error, outcome.content
    assert NUL_MESSAGE in json.loads(outcome.content)["error"]
    assert not Fact.all_objects.exists()


def test_a_fact_the_agent_stored_with_a_nul_is_taken_by_the_owners_topic_forget(context):
    outcome = tool_run(
        name="memory__store_fact",
        tool_input={"key": "note_sante", "value": "\x00Marie a un cancer du sein"},
        context=context,
    )
    topic_forget(topic="le cancer de Marie", actor="user")
    left = [f.value for f in Fact.objects.all()]
    print(outcome.content, left)
    assert not any("cancer" in v for v in left)
