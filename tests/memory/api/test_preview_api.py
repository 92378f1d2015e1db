"""POST /api/memory/preview: what would be injected, validated input, nothing logged."""

import pytest

from memory.models import MemoryRetrieval
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_row

pytestmark = pytest.mark.django_db

URL = "/api/memory/preview"


@pytest.fixture
def dentist(vector_store, local_embedder):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    index_row(KIND_FACT, fact.id)
    return fact


def test_preview_returns_the_memories_and_the_prompt_block(agent_api, dentist):
    response = agent_api.post(
        URL, {"message": "quand est le dentiste ?", "channel": "whatsapp"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert f"fact:{dentist.id}" in [m["id"] for m in body["memories"]]
    assert "dentiste" in body["prompt_block"]
    assert body["tokens_added"] > 0 and body["enabled"] is True
    assert "total" in body["timings_ms"]
    assert MemoryRetrieval.objects.count() == 0


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "message"),
        ({"message": "   "}, "message"),
        ({"message": "x" * 4001}, "message"),
        ({"message": "ok", "channel": "a b/c"}, "channel"),
        ({"message": "ok", "unknown": 1}, "unknown"),
    ],
)
def test_bad_input_is_a_400_with_a_message_per_field(agent_api, payload, field):
    response = agent_api.post(URL, payload, format="json")
    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"]


def test_anonymous_gets_no_preview(anonymous_api):
    assert anonymous_api.post(URL, {"message": "x"}, format="json").status_code in (401, 403)


def test_preview_answers_whatever_the_memory_types_stored(agent_api, vector_store, local_embedder):
    """Every type of fact, the always-injected identity facts included, serialises (no 500)."""
    from memory.models import MemoryType

    for kind in MemoryType:
        fact = fact_store(
            key=f"k_{kind.value}", value=f"Le dentiste {kind.label}", memory_type=kind
        )[0]
        index_row(KIND_FACT, fact.id)
    response = agent_api.post(URL, {"message": "le dentiste", "channel": "whatsapp"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert any(m["type"] == "identity" for m in body["core"])
    for item in body["core"] + body["memories"]:
        assert {"id", "kind", "text", "type", "channel", "timestamp", "sources"} <= set(item)
