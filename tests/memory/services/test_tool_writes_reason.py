"""A fact written through a tool says so in its history: « Créé » / « Modifié » by the agent,
not « Extrait d'une conversation », which stays the extraction pipeline's.

QA: `memory__store_fact`, `memory__index` and MCP `remember` (tests/memory/mcp) recorded
their writes as extracted, though nothing was extracted: the agent (or a client) wrote
them explicitly.
"""

from __future__ import annotations

import json

import pytest

from agent.extraction import FactCandidate, fact_candidate_store
from agent.tools import ToolContext, tool_run
from agent.tools_memory import index_key
from memory.models import Actor, Fact, FactSource, RevisionReason
from memory.services.dedup import fact_remember
from memory.services.indexing import KIND_FACT, index_row
from memory.services.messages import message_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, settings):
    settings.ANTHROPIC_API_KEY = ""  # dedup decides by its rule
    return vector_store


@pytest.fixture
def context():
    request = message_save(channel="mission_control", role="user", content="(la demande)")
    return ToolContext(channel="mission_control", message_ids=(request.id,))


def _reasons(key: str) -> list[tuple[str, str]]:
    """(actor, reason) of the fact's revisions, oldest first."""
    fact = Fact.objects.get(key=key)
    return list(fact.revisions.order_by("id").values_list("actor", "reason"))


def _tool(name: str, tool_input: dict, context: ToolContext) -> dict:
    outcome = tool_run(name=name, tool_input=tool_input, context=context)
    assert not outcome.is_error, outcome.content
    return json.loads(outcome.content)


def test_a_tool_write_through_dedup_is_created_then_edited(world):
    fact_remember(key="velo", value="Un vélo bleu", source=FactSource.TOOL)
    fact_remember(key="velo", value="Un vélo vert", source=FactSource.TOOL)
    assert _reasons("velo") == [
        (Actor.AGENT, RevisionReason.CREATED),
        (Actor.AGENT, RevisionReason.EDITED),
    ]


def test_an_explicit_write_of_another_source_is_created_too(world):
    fact_remember(key="velo", value="Un vélo bleu", source=FactSource.CONVERSATION, explicit=True)
    assert _reasons("velo") == [(Actor.AGENT, RevisionReason.CREATED)]


def _candidate(key: str, value: str) -> FactCandidate:
    return FactCandidate(
        key=key, value=value, memory_type="fact", importance=None, subjects=(), ttl=None
    )


def test_the_extraction_pipeline_still_records_extracted(world):
    message = message_save(channel="whatsapp", role="user", content="J'ai un vélo bleu")
    for value in ("Un vélo bleu", "Un vélo vert"):
        fact_candidate_store(
            _candidate("velo", value), channel="whatsapp", source_message_id=message.id
        )
    assert _reasons("velo") == [
        (Actor.AGENT, RevisionReason.EXTRACTED),
        (Actor.AGENT, RevisionReason.EXTRACTED),
    ]


def test_a_tool_write_merged_by_dedup_is_recorded_merged(world):
    first = fact_remember(key="epaule", value="Mickael s'est cassé l'épaule")
    index_row(KIND_FACT, first.fact.id)
    result = fact_remember(
        key="mickael_epaule",
        value="Mickael s'est cassé l'épaule",
        subjects=["ski"],
        source=FactSource.TOOL,
    )
    assert result.fact.pk == first.fact.pk
    assert _reasons("epaule") == [
        (Actor.AGENT, RevisionReason.EXTRACTED),
        (Actor.AGENT, RevisionReason.MERGED),
    ]


def test_memory_store_fact_is_recorded_created_then_edited(world, context):
    _tool("memory__store_fact", {"key": "user_bike", "value": "Il a un vélo bleu"}, context)
    body = _tool("memory__store_fact", {"key": "user_bike", "value": "Il a un vélo vert"}, context)
    assert body["action"] == "updated"
    assert Fact.objects.get(key="user_bike").source == FactSource.CONVERSATION  # unchanged
    assert _reasons("user_bike") == [
        (Actor.AGENT, RevisionReason.CREATED),
        (Actor.AGENT, RevisionReason.EDITED),
    ]


def test_memory_index_is_recorded_created(world, context):
    text = "Le digicode de l'immeuble de Paul est B1234"
    _tool("memory__index", {"text": text}, context)
    assert _reasons(index_key(text)) == [(Actor.AGENT, RevisionReason.CREATED)]
    assert RevisionReason.CREATED.label == "Créé"


def test_the_agents_self_items_are_created_not_extracted(world, context):
    """Review: the agent's self and goals are written by its tools (memory__self_remember,
    MCP self_remember, the API with its token), never by the extraction pipeline."""
    from memory.models import FactKind
    from memory.services.self_memory import agent_item_store

    result = agent_item_store(
        kind=FactKind.SELF, category="preference", content="J'aime les réponses courtes."
    )
    revisions = list(result.item.revisions.order_by("id").values_list("actor", "reason"))
    assert revisions == [(Actor.AGENT, RevisionReason.CREATED)]


def test_a_fact_the_agent_posts_to_the_api_is_created_then_edited(world, django_user_model):
    """Review: POST /api/memory/facts with the agent's token is an explicit write."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    agent = django_user_model.objects.create_user(username="agent", password=None)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=agent).key}")
    for value in ("Un vélo bleu", "Un vélo vert"):
        response = client.post("/api/memory/facts", {"key": "velo", "value": value}, format="json")
        assert response.status_code in (200, 201), response.content
    assert _reasons("velo") == [
        (Actor.AGENT, RevisionReason.CREATED),
        (Actor.AGENT, RevisionReason.EDITED),
    ]
