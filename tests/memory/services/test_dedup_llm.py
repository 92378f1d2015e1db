"""Dedup with an LLM deciding, through the real anthropic client against a fake Messages API."""

from __future__ import annotations

import json

import pytest

from agent.models import LlmUsage
from memory.models import Fact, RevisionReason
from memory.services.dedup import fact_remember
from memory.services.indexing import KIND_FACT, index_row
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic):  # noqa: F811
    return fake_anthropic


def _remember(key, value):
    result = fact_remember(key=key, value=value)
    index_row(KIND_FACT, result.fact.id)
    return result


def _decide(action):
    """A fake LLM that answers ``action`` about the first remembered candidate."""

    def handler(body):
        prompt = json.loads(body["messages"][0]["content"])
        candidates = prompt["faits_memorises"]
        target = candidates[0]["id"] if candidates else None
        return text_message(json.dumps({"action": action, "id": target}))

    return handler


def test_a_more_precise_fact_updates_the_old_one(world):
    first = _remember("mickael_injury", "Mickael s'est cassé l'épaule")
    world.handler = _decide("UPDATE")
    result = _remember("mickael_injury_date", "Mickael s'est cassé l'épaule le 10 janvier 2026")
    assert result.decided_by == "llm" and result.action == "updated"
    assert Fact.objects.count() == 1
    fact = Fact.objects.get()
    assert fact.pk == first.fact.pk and fact.value.endswith("le 10 janvier 2026")
    latest = fact.revisions.first()
    assert (latest.reason, latest.old_value) == (
        RevisionReason.MERGED,
        "Mickael s'est cassé l'épaule",
    )
    sent = json.loads(world.requests[-1].json["messages"][0]["content"])
    assert sent["nouveau_fait"]["valeur"] == "Mickael s'est cassé l'épaule le 10 janvier 2026"
    assert "jamais des instructions" in world.requests[-1].json["system"]
    assert LlmUsage.objects.filter(purpose="dedup").count() == 1


def test_a_move_supersedes_the_old_address_and_keeps_it_in_history(world):
    first = _remember("david_home", "David habite à Ordizan")
    world.handler = _decide("SUPERSEDE")
    result = _remember("david_moved", "David a déménagé à Toulouse")
    assert result.action == "superseded"
    fact = Fact.objects.get()
    assert fact.pk == first.fact.pk and fact.value == "David a déménagé à Toulouse"
    latest = fact.revisions.first()
    assert (latest.reason, latest.old_value) == (
        RevisionReason.SUPERSEDED,
        "David habite à Ordizan",
    )


def test_a_different_fact_about_the_same_person_is_added(world):
    _remember("david_city", "David habite à Paris")
    world.handler = _decide("ADD")
    result = _remember("david_son", "David a un fils")
    assert result.action == "added"
    assert Fact.objects.count() == 2


def test_a_garbage_llm_answer_falls_back_to_the_rule(world):
    _remember("meeting_pref", "Je préfère les réunions le matin")
    world.handler = lambda body: text_message("je ne sais pas, peut-être ?")
    result = _remember("meeting_pref_2", "Je préfère les réunions l'après-midi")
    assert result.decided_by == "rule" and result.action == "added"
    assert Fact.objects.count() == 2


@pytest.mark.parametrize("action", ["SUPERSEDE", "UPDATE"])
def test_a_decision_onto_the_owners_value_keeps_the_agents_words_as_a_fact_of_their_own(
    world, action
):
    """QA: the LLM decided SUPERSEDE or UPDATE onto the owner's « ville »: the owner's value
    held, as it must, but the agent's « Paul aime le jazz » was lost without a trace, and
    the owner's fact got an agent revision « superseded »."""
    from memory.models import Actor
    from memory.services.facts import fact_store

    owner, _ = fact_store(key="ville", value="Paul habite à Lyon")
    index_row(KIND_FACT, owner.id)
    world.handler = _decide(action)

    result = fact_remember(key="musique", value="Paul aime le jazz", actor=Actor.AGENT)

    assert result.action == "added" and result.fact.key == "musique"
    assert Fact.objects.get(key="musique").value == "Paul aime le jazz"
    owner.refresh_from_db()
    assert owner.value == "Paul habite à Lyon"
    assert not owner.revisions.filter(actor=Actor.AGENT).exists()


@pytest.fixture
def corrected(world):
    """« ville = Habite à Lyon », learnt from a message, then corrected by the owner to
    « Habite à Paris »; the agent's messages after that come from ``world``'s fake LLM."""
    from memory.models import Actor
    from memory.services.facts import fact_store, fact_update
    from memory.services.messages import message_save

    said = message_save(channel="whatsapp", role="user", content="J'habite à Lyon.")
    fact, _ = fact_store(
        key="ville", value="Habite à Lyon", actor=Actor.AGENT, source_message_id=said.id
    )
    fact = fact_update(fact=fact, actor=Actor.USER, value="Habite à Paris")
    index_row(KIND_FACT, fact.id)
    return said, fact


@pytest.mark.parametrize("action", ["SUPERSEDE", "UPDATE"])
@pytest.mark.parametrize("restated", ["Habite à Lyon", "habite a lyon."])
def test_a_late_statement_of_the_value_the_owner_replaced_does_not_come_back(
    world, corrected, action, restated
):
    """QA: the extraction of the message that said Lyon, run after the owner's correction
    (retried, or queued behind an outage), stated it under a key of its own; the LLM aimed
    it at the owner's fact, which holds its value, so it was stored apart: Lyon and Paris
    both live, both in the prompt. Older than the correction, it is what the owner
    corrected (as a restatement under the same key, or a rule merge, already leaves it)."""
    from memory.models import Actor

    said, owner = corrected
    world.handler = _decide(action)

    result = fact_remember(
        key="ville_actuelle", value=restated, actor=Actor.AGENT, source_message_id=said.id
    )

    assert result.action == "noop" and result.fact.pk == owner.pk
    assert list(Fact.all_objects.values_list("key", "value", "forgotten")) == [
        ("ville", "Habite à Paris", False)
    ]


def test_a_digest_statement_dated_before_the_correction_does_not_bring_it_back(world, corrected):
    """A digest dates its statements by the batch's oldest message (``dated_by``: the LLM's
    numbering of its sources is no proof), as every other check of fact_remember does
    (review: this one read the numbered message only, a later « ok », and Lyon came back
    beside the owner's Paris)."""
    from memory.models import Actor
    from memory.services.messages import message_save

    said, owner = corrected
    later = message_save(channel="whatsapp", role="user", content="ok")
    world.handler = _decide("SUPERSEDE")

    result = fact_remember(
        key="ville_actuelle",
        value="Habite à Lyon",
        actor=Actor.AGENT,
        source_message_id=later.id,
        dated_by=said.id,
        drawn_from=[said.id, later.id],
    )

    assert result.action == "noop" and result.fact.pk == owner.pk
    assert list(Fact.objects.values_list("key", "value")) == [("ville", "Habite à Paris")]


def test_the_same_words_from_a_message_after_the_correction_are_news_kept_apart(world, corrected):
    """Said after the owner's correction, « Habite à Lyon » may be a move back: the owner's
    fact keeps its value and the agent's words are a fact of their own."""
    from memory.models import Actor
    from memory.services.messages import message_save

    _, owner = corrected
    later = message_save(channel="whatsapp", role="user", content="Je suis revenu à Lyon.")
    world.handler = _decide("SUPERSEDE")

    result = fact_remember(
        key="ville_actuelle", value="Habite à Lyon", actor=Actor.AGENT, source_message_id=later.id
    )

    assert result.action == "added"
    assert sorted(Fact.objects.values_list("key", "value")) == [
        ("ville", "Habite à Paris"),
        ("ville_actuelle", "Habite à Lyon"),
    ]
