"""A late statement of the agent never replaces a value a later message gave the fact.

Extractions run out of order (a job retried after a restart, one queued behind an LLM
outage, a digest of old messages): what the memory ends up holding must not depend on
which ran last. Before, the extraction of an older message, run late, replaced the value a
newer message had given (« je suis à Lyon » over « je vis à Paris maintenant »); and after
the owner renamed a key, the late statement of the old key landed on the new fact the agent
had created under it since, rather than on the renamed fact it was about (the memory state
machine's finding).
"""

from __future__ import annotations

import json

import pytest

from memory.models import Actor, Fact
from memory.services.dedup import fact_remember
from memory.services.facts import fact_store, fact_update
from memory.services.indexing import KIND_FACT, index_row
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _said(text: str):
    return message_save(channel="whatsapp", role="user", content=text)


def test_a_late_statement_of_an_older_message_leaves_the_newer_value():
    older = _said("J'habite à Lyon")
    newer = _said("J'ai déménagé, j'habite à Paris maintenant")
    fact_store(key="ville", value="Paris", actor=Actor.AGENT, source_message_id=newer.id)

    # The older message's extraction, retried after a restart, runs last.
    fact, created = fact_store(
        key="ville", value="Lyon", actor=Actor.AGENT, source_message_id=older.id
    )

    assert not created
    assert Fact.objects.get(key="ville").value == "Paris"
    assert Fact.objects.get(key="ville").source_message_id == newer.id


def test_either_order_ends_on_the_newer_message_value():
    older = _said("Je travaille chez Airbus")
    newer = _said("J'ai changé de travail : je suis chez Thales")
    for first, second in ((older, newer), (newer, older)):
        Fact.all_objects.filter(key="employeur").delete()
        for message in (first, second):
            value = "Airbus" if message.id == older.id else "Thales"
            fact_store(
                key="employeur", value=value, actor=Actor.AGENT, source_message_id=message.id
            )
        assert Fact.objects.get(key="employeur").value == "Thales", (first.id, second.id)


def test_a_late_statement_through_the_dedup_leaves_the_newer_value(
    settings, vector_store, local_embedder
):
    settings.ANTHROPIC_API_KEY = ""
    older = _said("Mon vélo est bleu")
    newer = _said("J'ai repeint mon vélo en rouge")
    fact_remember(
        key="couleur_velo", value="Le vélo est rouge", actor=Actor.AGENT, source_message_id=newer.id
    )

    fact_remember(
        key="couleur_velo", value="Le vélo est bleu", actor=Actor.AGENT, source_message_id=older.id
    )

    assert Fact.objects.get(key="couleur_velo").value == "Le vélo est rouge"


def test_a_later_message_still_replaces_the_value():
    older = _said("J'habite à Lyon")
    fact_store(key="ville", value="Lyon", actor=Actor.AGENT, source_message_id=older.id)
    newer = _said("J'habite à Paris maintenant")

    fact_store(key="ville", value="Paris", actor=Actor.AGENT, source_message_id=newer.id)

    assert Fact.objects.get(key="ville").value == "Paris"


def test_a_statement_without_a_message_is_news():
    older = _said("J'habite à Lyon")
    fact_store(key="ville", value="Lyon", actor=Actor.AGENT, source_message_id=older.id)

    fact_store(key="ville", value="Paris", actor=Actor.AGENT)

    assert Fact.objects.get(key="ville").value == "Paris"


def test_a_late_statement_of_a_renamed_key_lands_on_the_renamed_fact_not_on_the_new_holder():
    first = _said("Mon médecin est le Dr Pereira")
    fact, _ = fact_store(
        key="medecin", value="Dr Pereira", actor=Actor.AGENT, source_message_id=first.id
    )
    # A message about the doctor; its extraction waits behind a busy worker.
    late = _said("Le Dr Pereira a déménagé rue Victor Hugo")
    # The owner renames the fact; the agent then states the old key as news.
    fact_update(fact=fact, actor=Actor.USER, key="medecin_traitant")
    news = _said("Mon dentiste, je l'appelle mon médecin : c'est le Dr Silva")
    holder, created = fact_store(
        key="medecin", value="Dr Silva", actor=Actor.AGENT, source_message_id=news.id
    )
    assert created

    # The late extraction of the message older than the rename states the old key.
    landed, _ = fact_store(
        key="medecin",
        value="Dr Pereira, rue Victor Hugo",
        actor=Actor.AGENT,
        source_message_id=late.id,
    )

    assert landed.pk == fact.pk
    assert Fact.objects.get(pk=holder.pk).value == "Dr Silva"
    assert Fact.objects.get(pk=fact.pk).value == "Dr Pereira, rue Victor Hugo"
    assert Fact.objects.get(pk=fact.pk).key == "medecin_traitant"


def test_a_late_statement_the_llm_takes_for_a_supersede_leaves_the_newer_value(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
):
    def supersede(body):
        candidates = json.loads(body["messages"][0]["content"])["faits_memorises"]
        target = candidates[0]["id"] if candidates else None
        return text_message(json.dumps({"action": "SUPERSEDE", "id": target}))

    fake_anthropic.handler = supersede
    older = _said("David habite à Ordizan")
    newer = _said("David a déménagé à Toulouse")
    moved = fact_remember(
        key="david_home", value="David habite à Toulouse", source_message_id=newer.id
    ).fact
    index_row(KIND_FACT, moved.id)

    # The older message's extraction, late, names the fact otherwise; the LLM says it
    # replaces the stored one.
    result = fact_remember(
        key="david_adresse", value="David habite à Ordizan", source_message_id=older.id
    )

    assert result.action == "noop"
    assert list(Fact.objects.values_list("key", "value")) == [
        ("david_home", "David habite à Toulouse")
    ]
