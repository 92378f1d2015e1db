"""Storing facts through dedup: the same fact updates, a different one is added, history is kept."""

from __future__ import annotations

import pytest

from memory.models import Fact, RevisionReason
from memory.services.dedup import fact_remember
from memory.services.indexing import KIND_FACT, index_row

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, settings):
    settings.ANTHROPIC_API_KEY = ""
    return vector_store


def _remember(key, value, **kwargs):
    result = fact_remember(key=key, value=value, **kwargs)
    index_row(KIND_FACT, result.fact.id)
    return result


def test_the_same_key_updates_and_keeps_a_revision(world):
    _remember("mickael_injury", "Mickael s'est cassé l'épaule")
    result = _remember("mickael_injury", "Mickael s'est cassé l'épaule le 10 janvier 2026")
    assert result.action == "updated"
    assert Fact.objects.count() == 1
    assert result.fact.revisions.first().old_value == "Mickael s'est cassé l'épaule"


def test_without_an_llm_a_near_identical_text_under_a_key_its_value_says_merges(world):
    first = _remember("epaule", "Mickael s'est cassé l'épaule")
    result = _remember("mickael_epaule", "Mickael s'est cassé l'épaule")
    # Merged into the first, and nothing written: a noop (a digest counts no new fact).
    assert result.action == "noop"
    assert result.fact.pk == first.fact.pk
    assert Fact.objects.count() == 1
    # The same text again changes nothing: no revision, no re-embedding.
    assert list(result.fact.revisions.values_list("reason", flat=True)) == ["extracted"]


def test_a_merge_that_adds_something_records_it(world):
    first = _remember("epaule", "Mickael s'est cassé l'épaule")
    result = _remember("mickael_epaule", "Mickael s'est cassé l'épaule", subjects=["ski"])
    assert result.fact.pk == first.fact.pk
    merge = result.fact.revisions.first()
    assert merge.reason == RevisionReason.MERGED and merge.changes["subjects"][1] == ["ski"]


def test_without_an_llm_same_topic_different_fact_is_never_overwritten(world):
    _remember("meeting_pref", "Je préfère les réunions le matin", memory_type="preference")
    result = _remember(
        "meeting_pref_2", "Je préfère les réunions l'après-midi", memory_type="preference"
    )
    assert result.action == "added"
    assert sorted(Fact.objects.values_list("value", flat=True)) == [
        "Je préfère les réunions l'après-midi",
        "Je préfère les réunions le matin",
    ]
    # It was a candidate (same topic), yet the rule did not merge it.
    assert [c.fact.key for c in result.candidates] == ["meeting_pref"]


def test_unrelated_facts_are_both_added(world):
    _remember("david_city", "David habite à Paris")
    result = _remember("david_son", "David a un fils")
    assert result.action == "added"
    assert Fact.objects.count() == 2


def test_a_store_outage_still_stores_the_fact(settings, local_embedder):
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    settings.ANTHROPIC_API_KEY = ""
    try:
        result = fact_remember(key="k", value="une valeur")
    finally:
        vector_store_reset()
    assert result.action == "added"
    assert Fact.objects.get(key="k").value == "une valeur"


def test_with_the_vector_store_held_elsewhere_a_restatement_still_merges(world, settings):
    """`manage.py mcp` beside serve: serve owns the embedded Qdrant folder, so this
    process cannot search it. The facts sharing words with the statement are
    compared on the spot instead of none (a restatement under another key was
    stored twice)."""
    from memory.exceptions import StoreUnavailable
    from memory.stores.vectors import get_vector_store, vector_store_reset
    from memory.stores.vectors_edge import EdgeVectorStore

    first = _remember("epaule", "Mickael s'est cassé l'épaule")
    _remember("david_city", "David habite à Paris")
    vector_store_reset()
    serve = EdgeVectorStore(settings.QDRANT_PATH)  # the other process holding the folder
    try:
        with pytest.raises(StoreUnavailable):
            get_vector_store()
        result = fact_remember(key="mickael_epaule", value="Mickael s'est cassé l'épaule")
    finally:
        serve.close()
    assert result.action == "noop"
    assert result.fact.pk == first.fact.pk
    assert Fact.objects.count() == 2
    assert [c.fact.key for c in result.candidates] == ["epaule"]


@pytest.mark.parametrize(
    ("first", "second", "value"),
    [
        ("marie_allergie", "paul_allergie", "Allergique aux arachides"),
        ("marie_employeur", "paul_employeur", "Travaille chez Google"),
        ("allergie", "allergie_marie", "Allergique aux arachides"),
        ("marie_allergie", "paul_allergies", "Allergique aux arachides"),  # review
        ("employeur_marie", "travail_paul", "Travaille chez Google"),  # review: no word shared
        ("injury", "mickael_shoulder", "Mickael s'est cassé l'épaule"),  # words it does not say
    ],
)
def test_without_an_llm_the_same_words_about_another_person_are_not_merged(
    world, first, second, value
):
    """QA: a value of a few words is embedded without its key, so the same words about
    Marie and about Paul scored 1.0 and were merged: that Paul is allergic was stored
    nowhere (« noop »). Only the keys tell them apart."""
    _remember(first, value)
    result = _remember(second, value)
    assert result.action == "added"
    assert sorted(Fact.objects.values_list("key", flat=True)) == sorted([first, second])


def test_a_qualifier_the_value_says_is_the_same_fact(world):
    first = _remember("ville", "Mickael habite à Lyon")
    result = _remember("ville_mickael", "Mickael habite à Lyon")
    assert result.action == "noop"
    assert result.fact.pk == first.fact.pk


def test_without_an_llm_a_changed_number_is_never_merged(world):
    _remember("gate_code", "Le code du portail est 4512")
    result = _remember("gate_code_new", "Le code du portail est 4513")
    assert result.action == "added"
    assert Fact.objects.count() == 2


def test_the_rule_refuses_a_near_identical_candidate_whose_numbers_differ(world):
    from memory.services.dedup import ADD, UPDATE, Candidate, rule_decide

    stored = _remember("gate_code", "Le code du portail est 4512").fact
    near = [Candidate(fact=stored, score=0.999)]
    assert rule_decide("Le code du portail est 4513", near) == (ADD, None)
    assert rule_decide("Le code du portail est 4512 !", near) == (UPDATE, stored)


def test_after_a_model_switch_a_restatement_is_compared_by_its_words(
    vector_store, monkeypatch, settings
):
    """Before `reindex --recreate` the knowledge collection holds another model's vectors
    and cannot be searched: the owner's facts sharing the statement's words are
    compared on the spot (only pending facts were, and the restatement was added)."""
    from tests.fakes.embedder import HashEmbedder, install
    from tests.memory.services.test_self_memory import AnotherModel

    settings.ANTHROPIC_API_KEY = ""
    install(monkeypatch, HashEmbedder())
    first = _remember("epaule", "Mickael s'est cassé l'épaule au ski")
    _remember("david_city", "David habite à Paris depuis longtemps")
    install(monkeypatch, AnotherModel())

    result = fact_remember(key="mickael_epaule", value="Mickael s'est cassé l'épaule au ski")

    assert result.action == "noop"
    assert result.fact.pk == first.fact.pk
    assert Fact.objects.count() == 2
