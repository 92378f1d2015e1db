"""A late statement of a key the owner renamed, then forgot or erased, does not bring the
fact back; an erasure of a fact set aside does not refuse statements about the live fact
that took its key since (QA 3).

A late (retried) extraction of a message older than the rename states the old key: before,
renamed_since only looked at live facts (the forgotten one came back live, as a new fact),
and an erasure left key marks for the fact's last key only (the old key in other words was
stored again). The erasure of « medecin (fait oublié n° 1) » marked « medecin », held by the
live fact stated since: its late statements were refused (FactErased) and lost.
"""

from __future__ import annotations

import json

import pytest

from agent.extraction_jobs import extraction_job_enqueue
from memory.models import Actor, Fact
from memory.selectors import facts_active
from memory.services.dedup import FactErased, fact_remember
from memory.services.erasing import fact_erase
from memory.services.facts import fact_forget, fact_update
from memory.services.jobs import job_run
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic  # noqa: F401
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


def test_a_late_statement_of_the_old_key_does_not_undo_the_forget_of_a_renamed_fact(
    settings, vector_store, local_embedder
):
    settings.ANTHROPIC_API_KEY = ""
    said = message_save(
        channel="whatsapp", role="user", content="Je dois 4000 euros à Paulo, à rendre en mai"
    )
    fact = fact_remember(
        key="dette_paulo",
        value="Dette de 4000 euros envers Paulo",
        actor=Actor.AGENT,
        source_message_id=said.id,
    ).fact
    # The owner renames the key, then forgets the fact.
    fact_update(fact=fact, actor=Actor.USER, key="argent_du")
    fact_forget(fact=Fact.objects.get(key="argent_du"), actor=Actor.USER)

    # A late (retried) extraction of the same, older message states the old key again.
    fact_remember(
        key="dette_paulo",
        value="Mickael doit rendre l'argent à Paulo en mai",
        actor=Actor.AGENT,
        source_message_id=said.id,
    )

    assert not facts_active().filter(value__contains="Paulo").exists(), list(
        facts_active().values_list("key", "value")
    )


def test_a_late_extraction_job_does_not_bring_back_a_renamed_then_forgotten_fact(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
):
    def extract(body: dict) -> str:
        prompt = json.dumps(body["messages"][-1]["content"], ensure_ascii=False)
        found = "Paulo" in prompt
        fact = {"key": "dette_paulo", "value": "Je dois 4000 euros à Paulo", "type": "fact"}
        return json.dumps({"facts": [fact] if found else []})

    fake_anthropic.handler = extract
    question, reply = exchange_save("whatsapp", "Je dois 4000 euros à Paulo", "Noté.")
    # The exchange's extraction waits behind a busy worker (or an LLM outage)...
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    # ...while the agent's tool had already stored it, and the owner renamed then forgot it.
    fact = fact_remember(
        key="dette_paulo",
        value="Dette de 4000 euros envers Paulo",
        actor=Actor.AGENT,
        source_message_id=question.id,
    ).fact
    fact_update(fact=fact, actor=Actor.USER, key="argent_du")
    fact_forget(fact=Fact.objects.get(key="argent_du"), actor=Actor.USER)

    assert job_run(job.id) == "done"

    assert not facts_active().filter(value__contains="Paulo").exists(), list(
        facts_active().values_list("key", "value")
    )


def test_a_late_statement_of_the_old_key_does_not_bring_back_a_renamed_then_erased_fact(
    settings,
):
    settings.ANTHROPIC_API_KEY = ""
    said = message_save(
        channel="whatsapp", role="user", content="Mon médecin traitant est le Dr Pereira"
    )
    fact = fact_remember(
        key="medecin_traitant", value="Dr Pereira", actor=Actor.AGENT, source_message_id=said.id
    ).fact
    # The owner renames the key, then erases the fact for good.
    fact_update(fact=fact, actor=Actor.USER, key="docteur")
    fact_erase(fact=Fact.objects.get(key="docteur"), actor=Actor.USER)

    # A late (retried) extraction of the same, older message restates it in other words.
    with pytest.raises(FactErased):
        fact_remember(
            key="medecin_traitant",
            value="Le médecin traitant est le Dr Pereira",
            actor=Actor.AGENT,
            source_message_id=said.id,
        )

    assert not Fact.all_objects.filter(value__contains="Pereira").exists()


def test_a_late_extraction_job_does_not_bring_back_a_renamed_then_erased_fact(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
):
    def extract(body: dict) -> str:
        prompt = json.dumps(body["messages"][-1]["content"], ensure_ascii=False)
        found = "4512" in prompt
        fact = {"key": "code_porte", "value": "Code de la porte : 4512", "type": "fact"}
        return json.dumps({"facts": [fact] if found else []})

    fake_anthropic.handler = extract
    question, reply = exchange_save("whatsapp", "Le code de la porte est 4512", "Noté.")
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    fact = fact_remember(
        key="code_porte",
        value="Le code de la porte est 4512",
        actor=Actor.AGENT,
        source_message_id=question.id,
    ).fact
    fact_update(fact=fact, actor=Actor.USER, key="digicode")
    fact_erase(fact=Fact.objects.get(key="digicode"), actor=Actor.USER)

    assert job_run(job.id) == "done"

    assert not facts_active().filter(value__contains="4512").exists(), list(
        facts_active().values_list("key", "value")
    )


def test_a_late_statement_about_the_live_key_is_not_refused_for_the_erased_aside_fact(
    settings, vector_store, local_embedder
):
    settings.ANTHROPIC_API_KEY = ""
    first = message_save(channel="whatsapp", role="user", content="Mon médecin est le Dr Pereira")
    old = fact_remember(
        key="medecin", value="Dr Pereira", actor=Actor.AGENT, source_message_id=first.id
    ).fact
    fact_forget(fact=old, actor=Actor.USER)  # the owner forgets it one by one

    # News after the forget: a new live fact « medecin »; the old one waits aside.
    news = message_save(channel="whatsapp", role="user", content="Mon médecin est le Dr Silva")
    live = fact_remember(
        key="medecin", value="Dr Silva", actor=Actor.AGENT, source_message_id=news.id
    ).fact
    assert live.pk != old.pk and Fact.objects.get(pk=live.pk).key == "medecin"
    # A later message about the live fact; its extraction waits behind a busy worker.
    later = message_save(
        channel="whatsapp", role="user", content="Le Dr Silva consulte rue Victor Hugo"
    )

    # The owner erases the OLD forgotten fact (its aside key) for good.
    aside = Fact.all_objects.get(pk=old.pk)
    assert aside.key != "medecin"
    fact_erase(fact=aside, actor=Actor.USER)

    # The late extraction of the later message restates the live fact.
    result = fact_remember(
        key="medecin",
        value="Dr Silva, rue Victor Hugo",
        actor=Actor.AGENT,
        source_message_id=later.id,
    )

    assert result.fact.pk == live.pk
    assert Fact.objects.get(pk=live.pk).value == "Dr Silva, rue Victor Hugo"


def test_a_late_statement_of_the_old_key_does_not_undo_a_topic_forget_of_a_renamed_fact(
    settings, vector_store, local_embedder
):
    from memory.services.forgetting import topic_forget

    settings.ANTHROPIC_API_KEY = ""
    said = message_save(channel="whatsapp", role="user", content="Je dois 4000 euros à Paulo")
    fact = fact_remember(
        key="dette_paulo",
        value="Dette de 4000 euros envers Paulo",
        actor=Actor.AGENT,
        source_message_id=said.id,
    ).fact
    fact_update(fact=fact, actor=Actor.USER, key="argent_du")
    topic_forget(topic="Paulo", actor=Actor.USER, only=[f"fact:{fact.pk}"])

    fact_remember(
        key="dette_paulo",
        value="Mickael doit rendre l'argent à Paulo en mai",
        actor=Actor.AGENT,
        source_message_id=said.id,
    )

    assert not facts_active().filter(value__contains="Paulo").exists()
    assert not Fact.objects.filter(key="dette_paulo").exists()


def test_an_erased_fact_set_aside_stays_erased_when_a_fact_renamed_since_holds_its_key(
    settings, vector_store, local_embedder
):
    """QA 4: the plain key's mark was dated by the holder's creation; a holder renamed to
    the key long after it was created dated it before the erased fact left the key, and a
    late extraction of the erased fact's own message stored its words again."""
    settings.ANTHROPIC_API_KEY = ""
    early = message_save(channel="whatsapp", role="user", content="Mon cardiologue : Dr Silva")
    holder = fact_remember(
        key="cardiologue", value="Dr Silva", actor=Actor.AGENT, source_message_id=early.id
    ).fact
    said = message_save(channel="whatsapp", role="user", content="Mon médecin est le Dr Pereira")
    old = fact_remember(
        key="medecin", value="Dr Pereira", actor=Actor.AGENT, source_message_id=said.id
    ).fact
    fact_forget(fact=old, actor=Actor.USER)
    news = message_save(channel="whatsapp", role="user", content="Mon médecin est le Dr Martin")
    second = fact_remember(
        key="medecin", value="Dr Martin", actor=Actor.AGENT, source_message_id=news.id
    ).fact
    fact_update(fact=Fact.objects.get(pk=second.pk), actor=Actor.USER, key="generaliste")
    fact_update(fact=Fact.objects.get(pk=holder.pk), actor=Actor.USER, key="medecin")
    fact_erase(fact=Fact.all_objects.get(pk=old.pk), actor=Actor.USER)

    with pytest.raises(FactErased):
        fact_remember(
            key="medecin",
            value="Le Dr Pereira est mon médecin",
            actor=Actor.AGENT,
            source_message_id=said.id,
        )

    assert not Fact.all_objects.filter(value__contains="Pereira").exists()
