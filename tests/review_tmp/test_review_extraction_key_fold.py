"""Review: the extraction's key rule (normalize_key) no longer folds as the agent's keys
fold (rules.fact_key_folded). The fold keeps # % & @ § and every symbol (€, emoji); the
extraction keeps only + and #. A model stating the owner's « taux_% » or « R&D » gets
« taux » / « r_d »: before this change both folded alike (« taux », « r_d »); now they
are other keys, so the statement starts a second live fact beside the owner's, and the
erasure marks of an erased « r&d » (left with the new fold only) no longer recognise a
late extraction of it.
"""

from __future__ import annotations

import json

import pytest

from agent.extraction import normalize_key
from agent.extraction_jobs import exchange_facts_save
from memory.models import Actor, Fact, fact_key_folded
from memory.services.erasing import fact_erase
from memory.services.facts import fact_store
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic):  # noqa: F811
    return fake_anthropic


def _exchange():
    question = message_save(
        channel="whatsapp", role="user", content="Pour info, on a revu les chiffres ce matin."
    )
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    return question, reply


def _extract(world, question, reply, key, value):
    world.script(
        text_message(
            json.dumps(
                {"facts": [{"key": key, "value": value, "type": "fact", "subjects": []}]},
                ensure_ascii=False,
            )
        )
    )
    return exchange_facts_save(
        message_ids=[question.id], reply_id=reply.id, channel="whatsapp", tool_results=[]
    )


@pytest.mark.parametrize("raw", ["R&D", "taux_%", "budget_€", "contact_@"])
def test_the_extractions_key_folds_as_the_key_it_was_given(raw):
    """rules.fact_key_folded's docstring: « The extraction's key rule
    (agent.extraction.normalize_key: ASCII snake_case) folds alike »."""
    assert fact_key_folded(normalize_key(raw)) == fact_key_folded(raw)


def test_the_models_statement_of_the_owners_key_is_no_second_fact(world):
    fact_store(key="taux_%", value="Taux d'épargne de 12 %", actor=Actor.USER)
    question, reply = _exchange()

    _extract(world, question, reply, "taux_%", "Le propriétaire vise un nouveau placement")

    live = sorted(Fact.objects.filter(forgotten=False).values_list("key", flat=True))
    assert live == ["taux_%"], live


def test_a_late_extraction_of_an_erased_key_stays_out(world):
    question, reply = _exchange()  # written before the erasure
    owner = fact_store(key="r&d", value="Budget recherche : 40 000 €", actor=Actor.USER)[0]
    fact_erase(fact=owner, actor=Actor.USER)

    _extract(world, question, reply, "R&D", "L'entreprise investit dans la recherche")

    assert not Fact.all_objects.exists(), list(Fact.all_objects.values_list("key", "value"))
