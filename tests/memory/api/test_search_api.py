"""GET /api/memory/search: semantic (real local embedder + embedded Qdrant) and text (FTS5)."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Fact, Message, Summary
from memory.services.facts import fact_forget, fact_store
from memory.services.indexing import index_rows
from memory.services.search import MAX_LIMIT
from memory.services.search_hits import EXCERPT_CHARS

pytestmark = pytest.mark.django_db

SEARCH = "/api/memory/search"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def unreachable_embedder(settings):
    """Voyage configured at an address where nothing listens: embedding fails for real."""
    from memory.stores.embedders import embedder_reset

    embedder_reset()
    settings.VOYAGE_API_KEY = "clé-de-test"
    settings.VOYAGE_BASE_URL = f"http://127.0.0.1:{closed_port()}/v1"
    settings.VOYAGE_MAX_RETRIES = 0
    settings.VOYAGE_TIMEOUT_S = 2.0
    yield
    embedder_reset()


@pytest.fixture
def indexed_memory(vector_store, local_embedder):
    """A fact, a summary and an exchange, embedded for real and written to Qdrant."""
    shoulder, _ = fact_store(
        key="blessure_epaule",
        value="Mickael s'est blessé à l'épaule droite en escalade en mars.",
        memory_type="event",
        channel="whatsapp",
    )
    fact_store(key="plat_prefere", value="Les lentilles au curry.", memory_type="preference")
    summary = Summary.objects.create(
        channel="whatsapp", content="Discussion sur un voyage au Japon prévu en octobre."
    )
    question = Message.objects.create(
        channel="dashboard", role="user", content="Quel kiné pour mon épaule ?"
    )
    Message.objects.create(
        channel="dashboard",
        role="assistant",
        content="Le kiné de la rue Victor Hugo, vu pour ton épaule.",
        reply_to=question,
    )
    index_rows("fact", list(Fact.objects.values_list("id", flat=True)))
    index_rows("summary", [summary.id])
    index_rows("message", [question.id])
    return shoulder


def test_semantic_search_finds_a_fact_by_meaning(agent_api, indexed_memory):
    response = agent_api.get(SEARCH, {"q": "douleur à l'épaule", "mode": "semantic"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "semantic"
    assert body["count"] == len(body["results"]) > 0
    facts = [hit for hit in body["results"] if hit["kind"] == "fact"]
    assert facts[0]["key"] == "blessure_epaule"
    assert facts[0]["source"] == "knowledge"
    assert facts[0]["channel"] == "whatsapp"
    assert facts[0]["type"] == "event"
    assert 0 < facts[0]["score"] <= 1
    scores = [hit["score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_semantic_search_covers_exchanges_and_summaries(agent_api, indexed_memory):
    exchange = agent_api.get(SEARCH, {"q": "kinésithérapeute épaule"}).json()["results"]
    assert any(hit["kind"] == "exchange" and "Victor Hugo" in hit["excerpt"] for hit in exchange)
    trip = agent_api.get(SEARCH, {"q": "voyage au Japon"}).json()["results"]
    assert any(hit["kind"] == "summary" and "Japon" in hit["excerpt"] for hit in trip)


def test_semantic_search_hides_facts_forgotten_or_expired_since_indexing(agent_api, indexed_memory):
    """Qdrant still has the point: T1 is checked before a fact is shown."""
    fact_forget(fact=indexed_memory, actor=Actor.USER)
    lentils = Fact.objects.get(key="plat_prefere")
    Fact.objects.filter(pk=lentils.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    for query in ("blessure épaule escalade", "lentilles au curry"):
        results = agent_api.get(SEARCH, {"q": query, "limit": 50}).json()["results"]
        assert not [hit for hit in results if hit["kind"] == "fact"], results


def test_semantic_search_respects_the_minimum_score(agent_api, indexed_memory):
    from memory.services.settings import memory_settings_update

    loose = agent_api.get(SEARCH, {"q": "douleur à l'épaule"}).json()["results"]
    memory_settings_update(changes={"search_min_score": 0.99})
    strict = agent_api.get(SEARCH, {"q": "douleur à l'épaule"}).json()["results"]
    assert len(strict) < len(loose)
    assert all(hit["score"] >= 0.99 for hit in strict)


def test_semantic_search_says_503_in_french_when_embeddings_are_down(
    agent_api, vector_store, unreachable_embedder
):
    response = agent_api.get(SEARCH, {"q": "épaule", "mode": "semantic"})
    assert response.status_code == 503
    message = response.json()["message"]
    assert "recherche sémantique est indisponible" in message
    assert "texte fonctionne toujours" in message


def test_text_search_still_works_when_embeddings_are_down(agent_api, unreachable_embedder):
    Message.objects.create(channel="whatsapp", role="user", content="J'ai mal à l'épaule")
    response = agent_api.get(SEARCH, {"q": "epaule", "mode": "text"})
    assert response.status_code == 200
    assert response.json()["results"][0]["excerpt"] == "J'ai mal à l'épaule"


def test_text_search_finds_messages_and_facts_without_accents(agent_api):
    Message.objects.create(channel="whatsapp", role="user", content="Rendez-vous chez le kiné")
    fact_store(key="kine", value="Le kiné s'appelle Hélène", channel="dashboard")
    fact_store(key="autre", value="Sans rapport")
    response = agent_api.get(SEARCH, {"q": "KINE", "mode": "text"})
    assert response.status_code == 200
    results = response.json()["results"]
    assert {(hit["kind"], hit["source"]) for hit in results} == {
        ("message", "messages_fts"),
        ("fact", "facts"),
    }
    fact = next(hit for hit in results if hit["kind"] == "fact")
    assert (fact["key"], fact["channel"], fact["type"]) == ("kine", "dashboard", "fact")
    message = next(hit for hit in results if hit["kind"] == "message")
    assert (message["channel"], message["type"]) == ("whatsapp", "user")
    assert message["date"]


def test_text_search_hides_forgotten_facts(agent_api):
    fact, _ = fact_store(key="ancien_travail", value="Travaillait chez Acme")
    fact_forget(fact=fact, actor=Actor.USER)
    assert agent_api.get(SEARCH, {"q": "Acme", "mode": "text"}).json()["results"] == []


def test_excerpts_are_200_characters_around_the_match(agent_api):
    content = "blabla " * 100 + "le mot rhubarbe est ici " + "fin " * 100
    Message.objects.create(channel="c", role="user", content=content)
    hit = agent_api.get(SEARCH, {"q": "rhubarbe", "mode": "text"}).json()["results"][0]
    assert len(hit["excerpt"]) <= EXCERPT_CHARS
    assert "rhubarbe" in hit["excerpt"]


def test_the_limit_is_capped(agent_api):
    for index in range(MAX_LIMIT + 10):
        Message.objects.create(channel="c", role="user", content=f"pomme numéro {index}")
    response = agent_api.get(SEARCH, {"q": "pomme", "mode": "text", "limit": 10_000})
    assert response.status_code == 200
    assert response.json()["count"] == MAX_LIMIT
    limited = agent_api.get(SEARCH, {"q": "pomme", "mode": "text", "limit": 3}).json()
    assert limited["count"] == 3


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": "x" * 501}, "q"),
        ({"q": "x", "mode": "magique"}, "mode"),
        ({"q": "x", "limit": 0}, "limit"),
        ({"q": "x", "limit": "dix"}, "limit"),
    ],
)
def test_bad_search_parameters_are_400_per_field(agent_api, params, field):
    response = agent_api.get(SEARCH, params)
    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"]


def test_fts_syntax_in_the_query_is_plain_text(agent_api):
    Message.objects.create(channel="c", role="user", content='il a dit "NEAR" (OR) *')
    response = agent_api.get(SEARCH, {"q": '"NEAR" (OR) * AND', "mode": "text"})
    assert response.status_code == 200


def test_hybrid_search_ranks_like_the_auto_retrieval(agent_api, indexed_memory):
    response = agent_api.get(SEARCH, {"q": "blessure à l'épaule en escalade", "mode": "hybrid"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "hybrid" and body["count"] >= 1
    assert body["results"][0]["kind"] == "fact"
    assert "épaule" in body["results"][0]["excerpt"]
    assert {hit["source"] for hit in body["results"]} == {"hybrid"}


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("voyage", "voyage au Japon"),  # the summary's own word
        ("vacances en Asie", "voyage au Japon"),
        ("ce que j'aime manger", "lentilles au curry"),
    ],
)
def test_hybrid_search_finds_what_the_pre_hook_would_not_inject(
    agent_api, indexed_memory, query, found
):
    """The owner typed a search: the relevance gate, which keeps the pre-hook from
    injecting memories on a message it finds off-topic, does not empty it. Before:
    "voyage" found the summary in semantic mode and nothing at all in hybrid."""
    response = agent_api.get(SEARCH, {"q": query, "mode": "hybrid"})
    assert response.status_code == 200, response.content
    assert any(found in hit["excerpt"] for hit in response.json()["results"])


@pytest.mark.parametrize("mode", ["semantic", "text", "hybrid"])
def test_every_mode_takes_the_filters(agent_api, indexed_memory, mode):
    response = agent_api.get(SEARCH, {"q": "épaule", "mode": mode, "memory_type": "event"})
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert results and {hit["kind"] for hit in results} == {"fact"}
    response = agent_api.get(SEARCH, {"q": "épaule", "mode": mode, "channel": "dashboard"})
    assert {hit["channel"] for hit in response.json()["results"]} <= {"dashboard"}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "hier"}, "since"),
        ({"since": "2026-03-01", "until": "2026-02-01"}, "until"),
        ({"memory_type": "inconnu"}, "memory_type"),
    ],
)
def test_bad_filters_get_a_french_400(agent_api, params, field):
    response = agent_api.get(SEARCH, {"q": "épaule", "mode": "text", **params})
    assert response.status_code == 400
    assert field in response.content.decode()


def test_a_channel_filter_no_channel_can_have_is_refused_in_french(agent_api):
    answer = agent_api.get("/api/v1/memory/search", {"q": "x", "channel": "bad channel!"})

    assert answer.status_code == 400, answer.content
    assert "canal" in answer.content.decode().lower()
