"""POST /api/memory/context: the pre-hook as a service, logged like our agent's own calls."""

from __future__ import annotations

import json
import re

import pytest

from memory.api.context import KEY_WITHOUT_RECORD
from memory.api.messages import BODY_NOT_AN_OBJECT
from memory.models import MemoryRetrieval, MemorySettings, Message
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, index_row
from memory.services.messages import message_save
from memory.services.retrieval import retrieval_warm

pytestmark = pytest.mark.django_db

URL = "/api/memory/context"
PREVIEW_URL = "/api/memory/preview"


@pytest.fixture
def dentist(vector_store, local_embedder):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    index_row(KIND_FACT, fact.id)
    retrieval_warm()  # as serve does at start: the first query embedding is not timed out
    return fact


def _unmarked(block: str) -> str:
    return re.sub(r"MEMOIRE [0-9A-F]{16}", "MEMOIRE", block)


def _post(api, body, url=URL):
    return api.post(url, body, format="json")


def test_it_returns_the_block_the_memories_with_scores_and_the_tokens(agent_api, dentist):
    response = _post(agent_api, {"message": "quand est le dentiste ?", "channel": "gateway"})

    assert response.status_code == 200, response.content
    body = response.json()
    [memory] = [m for m in body["memories"] if m["id"] == f"fact:{dentist.id}"]
    assert 0 < memory["score"] <= 1 and memory["kind"] == "fact"
    assert "dentiste mardi à 9 heures" in body["prompt_block"]
    assert body["tokens_added"] > 0 and body["enabled"] is True
    assert body["message_ids"] == []


def test_each_call_is_logged_in_the_retrievals_like_the_agents(agent_api, owner_api, dentist):
    body = _post(agent_api, {"message": "quand est le dentiste ?", "channel": "gateway"}).json()

    row = MemoryRetrieval.objects.get(pk=body["retrieval_id"])
    assert row.channel == "gateway"
    assert row.message_preview == "quand est le dentiste ?"
    assert [m["id"] for m in row.memories] == [m["id"] for m in body["memories"]]
    assert row.tokens_added == body["tokens_added"]
    listed = owner_api.get("/api/memory/retrievals", {"channel": "gateway"}).json()["results"]
    assert [r["id"] for r in listed] == [row.id]


def test_it_answers_what_the_preview_shows_but_only_it_is_logged(agent_api, dentist):
    payload = {"message": "quand est le dentiste ?", "channel": "gateway"}
    preview = _post(agent_api, payload, PREVIEW_URL).json()
    assert MemoryRetrieval.objects.count() == 0

    context = _post(agent_api, payload).json()

    assert [m["id"] for m in context["memories"]] == [m["id"] for m in preview["memories"]]
    # The same block, but for its marker (random on every build, so no memory can forge it).
    assert _unmarked(context["prompt_block"]) == _unmarked(preview["prompt_block"])
    assert MemoryRetrieval.objects.count() == 1


def test_record_stores_the_message_as_the_messages_endpoint_does(agent_api, dentist):
    body = _post(
        agent_api,
        {"message": "quand est le dentiste ?", "channel": "gateway", "record": True, "author": "m"},
    ).json()

    [saved] = Message.objects.all()
    assert body["message_ids"] == [saved.id]
    assert (saved.channel, saved.role, saved.source, saved.author) == (
        "gateway",
        "user",
        "user",
        "m",
    )
    assert "dentiste mardi" in body["prompt_block"]


@pytest.mark.django_db(transaction=True)
def test_the_recorded_message_is_never_its_own_context(
    agent_api, vector_store, local_embedder, eager_tasks
):
    """Indexed as soon as it is committed, the message must still not come back as a memory."""
    earlier = message_save(
        channel="whatsapp", role="user", content="Je me suis cassé l'épaule au ski à Luchon"
    )
    index_row(KIND_MESSAGE, earlier.id)
    retrieval_warm()

    body = _post(
        agent_api,
        {"message": "Mon épaule cassée au ski me fait mal", "channel": "gateway", "record": True},
    ).json()

    [recorded] = body["message_ids"]
    assert Message.objects.get(pk=recorded).index_state == "indexed"
    ids = [m["id"] for m in body["memories"]]
    assert f"message:{earlier.id}" in ids
    assert f"message:{recorded}" not in ids
    assert "fait mal" not in body["prompt_block"]


def test_a_retried_record_with_its_key_stores_the_message_once(agent_api, dentist):
    payload = {
        "message": "quand est le dentiste ?",
        "channel": "gateway",
        "record": True,
        "idempotency_key": "gw-42",
    }
    first = _post(agent_api, payload).json()
    again = _post(agent_api, payload).json()

    assert again["message_ids"] == first["message_ids"]
    assert Message.objects.count() == 1


def test_with_auto_retrieval_off_nothing_is_injected_nor_logged(agent_api, dentist):
    settings = MemorySettings.load()
    settings.auto_retrieve_enabled = False
    settings.save()

    body = _post(
        agent_api, {"message": "quand est le dentiste ?", "channel": "gateway", "record": True}
    ).json()

    assert body["enabled"] is False and body["prompt_block"] == "" and body["memories"] == []
    assert body["retrieval_id"] is None and not MemoryRetrieval.objects.exists()
    assert len(body["message_ids"]) == 1


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"channel": "gateway"}, "message"),
        ({"message": "quand ?"}, "channel"),
        ({"message": "  ", "channel": "gateway"}, "message"),
        ({"message": "x" * 50_001, "channel": "gateway"}, "message"),
        ({"message": "quand ?", "channel": "a b/c"}, "channel"),
        ({"message": "quand ?", "channel": "gateway", "record": "peut-être"}, "record"),
        ({"message": "quand ?", "channel": "gateway", "top_k": 3}, "top_k"),
    ],
)
def test_bad_input_is_a_french_400_naming_the_field(agent_api, payload, field):
    response = _post(agent_api, payload)

    assert response.status_code == 400, response.content
    assert response.json()["message"] == "Données invalides."
    assert field in response.json()["extra"]["fields"]
    assert not MemoryRetrieval.objects.exists() and not Message.objects.exists()


def test_a_key_without_record_is_refused(agent_api):
    response = _post(
        agent_api, {"message": "quand ?", "channel": "gateway", "idempotency_key": "k"}
    )
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["idempotency_key"] == [KEY_WITHOUT_RECORD]


def test_anonymous_gets_no_context(anonymous_api):
    response = _post(anonymous_api, {"message": "quand ?", "channel": "gateway", "record": True})
    assert response.status_code == 401
    assert not Message.objects.exists()


@pytest.mark.parametrize("body", [None, [], "quand ?", 3])
def test_a_body_that_is_not_an_object_is_a_french_400(agent_api, body):
    response = agent_api.post(URL, json.dumps(body), content_type="application/json")

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["non_field_errors"] == [BODY_NOT_AN_OBJECT]
    assert not MemoryRetrieval.objects.exists()


def test_a_long_message_is_recorded_whole(agent_api, dentist):
    """Longer than the preview takes: stored whole, its context read from its beginning."""
    text = "Quand est le dentiste ? " + "blabla " * 1000
    body = _post(agent_api, {"message": text, "channel": "gateway", "record": True}).json()

    assert Message.objects.get(pk=body["message_ids"][0]).content == text.strip()
    assert "dentiste mardi" in body["prompt_block"]
