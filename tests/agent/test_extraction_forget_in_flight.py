"""Extraction jobs when the owner forgets while one of their LLM calls is in flight: the
answer is not kept on the job, and nothing drawn from what was forgotten is written."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

import agent.client
from agent.extraction_jobs import extraction_job_enqueue
from agent.prompts import EXTRACTION_SYSTEM_PROMPT
from memory.models import Actor, Fact, Message
from memory.services.facts import fact_store
from memory.services.forgetting import forgettings_purge, topic_forget
from memory.services.jobs import job_run
from memory.services.messages import message_save
from tests.fakes.anthropic import text_message
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db


def _exchange(text: str):
    question = message_save(channel="whatsapp", role="user", content=text)
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    return question, reply, job


def _system(body: dict) -> str:
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system)
    return system


def _route(fake, **answers):
    """Answer each LLM call by its purpose (recognised by its system prompt); the forget's
    judge gets an unusable answer (its word rule decides)."""
    from memory.services.dedup import DEDUP_SYSTEM_PROMPT

    def handler(body):
        system = _system(body)
        if system.startswith(EXTRACTION_SYSTEM_PROMPT[:60]) and "extraction" in answers:
            return text_message(json.dumps(answers["extraction"], ensure_ascii=False))
        if system.startswith(DEDUP_SYSTEM_PROMPT[:60]) and "dedup" in answers:
            return text_message(json.dumps(answers["dedup"]))
        return text_message("pas du JSON")

    fake.handler = handler


def _forget_during(monkeypatch, purpose: str, topic: str):
    """Wrap llm_json: when the call of ``purpose`` is made, the owner forgets ``topic``
    first (the job read the messages, the LLM has not answered yet)."""
    llm_json = agent.client.llm_json
    done: list[object] = []

    def wrapped(**kwargs):
        if kwargs.get("purpose") == purpose and not done:
            done.append(topic_forget(topic=topic, actor=Actor.USER))
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", wrapped)
    return done


def test_the_llms_answer_about_an_exchange_forgotten_while_it_ran_is_not_kept_on_the_job(
    vector_store, fake_anthropic, monkeypatch, settings
):
    """The extraction read the exchange, the owner forgot it, then the LLM answered with
    the forgotten content reworded: the job waits for the undo, and its payload (shown
    by the admin) must not keep that answer for the whole retention window."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    _, _, job = _exchange("Je suis suivi pour une hernie discale à la clinique Pasteur.")
    done = _forget_during(monkeypatch, "extraction", "hernie discale")
    _route(
        fake_anthropic,
        extraction={
            "facts": [{"key": "sante_dos", "value": "Souffre du bas du dos, suivi médical"}]
        },
    )
    assert job_run(job.pk) == "waiting"
    assert done and done[0].forgetting_id
    job.refresh_from_db()
    stored = json.dumps(job.payload, ensure_ascii=False)
    assert "bas du dos" not in stored, stored
    assert "candidates" not in job.payload


def test_a_fact_whose_exchange_was_forgotten_during_the_dedup_decision_is_not_written(
    vector_store, fake_anthropic, monkeypatch, settings
):
    """The extraction's LLM answered, the exchange was still there, then storing its first
    candidate asked the LLM for a dedup decision; the owner forgot the exchange
    meanwhile. Nothing drawn from the forgotten exchange may be written."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    # A fact close to the first candidate, so that storing it asks the LLM (dedup).
    fact_store(key="brother_city", value="David habite à Toulouse", actor=Actor.USER)
    question, reply, job = _exchange(
        "Mon frère David habite à Toulouse, il a une maladie de Crohn depuis l'an dernier."
    )
    done = _forget_during(monkeypatch, "dedup", "maladie de Crohn")
    _route(
        fake_anthropic,
        extraction={
            "facts": [
                {"key": "brother_home", "value": "David habite à Toulouse depuis peu"},
                {"key": "brother_health", "value": "David a un souci intestinal chronique"},
            ]
        },
        dedup={"action": "ADD", "id": None},
    )
    outcome = job_run(job.pk)
    assert done and done[0].forgetting_id, "the dedup LLM call was made"
    assert not Message.objects.filter(pk=question.pk).exists()  # forgotten
    written = list(
        Fact.all_objects.filter(source_message_id=question.pk).values_list("key", "value")
    )
    # The forget's purge deletes what the forget took: these facts were not taken.
    forgettings_purge(now=timezone.now() + timedelta(days=30))
    after_purge = list(
        Fact.all_objects.filter(value__contains="intestinal").values_list("key", "forgotten")
    )
    assert (written, after_purge) == ([], []), outcome


def test_a_fact_drawn_from_tool_results_forgotten_while_the_llm_read_them_is_not_written(
    vector_store, fake_anthropic, monkeypatch, settings
):
    """An exchange whose tool results (a memory search) quoted an older exchange; the owner
    forgets that older exchange's topic while the extraction's LLM reads those results.
    The LLM states the forgotten content as a fact: it must not be written (a run after
    the forget would not even have read the tool results, agent.extraction_jobs)."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    old = message_save(
        channel="whatsapp", role="user", content="J'ai une hernie discale, suivie à la clinique."
    )
    message_save(channel="whatsapp", role="assistant", content="Courage !", reply_to_id=old.id)
    question = message_save(
        channel="whatsapp", role="user", content="Rappelle-moi ce que je t'ai dit sur ma santé ?"
    )
    reply = message_save(
        channel="whatsapp",
        role="assistant",
        content="Tu m'avais parlé d'un souci de dos suivi à la clinique.",
        reply_to_id=question.id,
    )
    job = extraction_job_enqueue(
        message_ids=[question.id],
        reply_id=reply.id,
        channel="whatsapp",
        tool_results=["[il y a 2 jours] J'ai une hernie discale, suivie à la clinique."],
    )
    done = _forget_during(monkeypatch, "extraction", "hernie discale")
    asked: list[bool] = []

    def handler(body):  # the LLM states what the tools' results quote, when it reads them
        if not _system(body).startswith(EXTRACTION_SYSTEM_PROMPT[:60]):
            return text_message("pas du JSON")  # the forget's judge: its word rule decides
        quoted = "hernie" in json.dumps(body["messages"], ensure_ascii=False)
        asked.append(quoted)
        fact = {"key": "sante_dos", "value": "Le propriétaire a une hernie discale"}
        return text_message(json.dumps({"facts": [fact] if quoted else []}))

    fake_anthropic.handler = handler
    outcome = job_run(job.pk)
    assert asked == [True, False]  # asked again without the results the forget took
    assert done and done[0].counts["exchanges"] == 1  # the old exchange only
    assert Message.objects.filter(pk=question.pk).exists()
    assert not Message.objects.filter(pk=old.pk).exists()
    assert not Fact.all_objects.filter(value__icontains="hernie").exists(), (
        outcome,
        list(Fact.all_objects.values_list("key", "value", "forgotten")),
    )


def test_a_merge_decided_while_its_exchange_was_forgotten_changes_nothing(
    vector_store, fake_anthropic, monkeypatch, settings
):
    """The same, when the dedup decision is to merge the candidate into a fact the agent
    made earlier: that fact keeps its words, none of the forgotten exchange's."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    earlier, _ = fact_store(key="brother_city", value="David habite à Toulouse", actor=Actor.AGENT)
    _, _, job = _exchange("Mon frère David habite à Toulouse, il a une maladie de Crohn.")
    done = _forget_during(monkeypatch, "dedup", "maladie de Crohn")
    _route(
        fake_anthropic,
        extraction={"facts": [{"key": "brother_home", "value": "David, Crohn, vit à Toulouse"}]},
        dedup={"action": "UPDATE", "id": earlier.pk},
    )
    assert job_run(job.pk) == "waiting"  # for the forget's undo, or its purge
    assert done and done[0].forgetting_id
    earlier.refresh_from_db()
    assert earlier.value == "David habite à Toulouse"
    assert not Fact.all_objects.filter(value__icontains="crohn").exists()


@pytest.mark.parametrize("how", ["topic", "fact"])
def test_a_forget_dated_before_the_call_but_committed_during_it_is_seen(
    vector_store, fake_anthropic, monkeypatch, settings, how
):
    """A forget's transaction takes its time before the extraction asks the LLM and commits
    while the LLM reads the tool results (it waited for the write lock): its date is
    earlier than the question, yet the results the LLM read may quote what it took. The
    check is by what was committed since the call began, not by the forget's date."""
    from memory.models import Forgetting

    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    old = message_save(
        channel="whatsapp", role="user", content="J'ai une hernie discale, suivie à la clinique."
    )
    fact, _ = fact_store(key="sante_dos", value="souci de dos", actor=Actor.USER)
    question = message_save(
        channel="whatsapp", role="user", content="Rappelle-moi ce que je t'ai dit sur ma santé ?"
    )
    reply = message_save(
        channel="whatsapp", role="assistant", content="Un souci de dos.", reply_to_id=question.id
    )
    job = extraction_job_enqueue(
        message_ids=[question.id],
        reply_id=reply.id,
        channel="whatsapp",
        tool_results=["[il y a 2 jours] J'ai une hernie discale, suivie à la clinique."],
    )
    llm_json = agent.client.llm_json
    forgot: list[bool] = []

    def wrapped(**kwargs):
        if kwargs.get("purpose") == "extraction" and not forgot:
            earlier = timezone.now() - timedelta(seconds=1)  # dated before the call
            if how == "topic":
                forgetting = topic_forget(topic="hernie discale", actor=Actor.USER)
                Forgetting.objects.filter(pk=forgetting.forgetting_id).update(created_at=earlier)
            else:
                from memory.services.facts import fact_forget

                fact_forget(fact=fact, actor=Actor.USER)
                Fact.all_objects.filter(pk=fact.pk).update(forgotten_at=earlier)
            forgot.append(True)
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", wrapped)
    asked: list[bool] = []

    def handler(body):
        if not _system(body).startswith(EXTRACTION_SYSTEM_PROMPT[:60]):
            return text_message("pas du JSON")
        quoted = "hernie" in json.dumps(body["messages"], ensure_ascii=False)
        asked.append(quoted)
        stated = {"key": "sante_hernie", "value": "Le propriétaire a une hernie discale"}
        return text_message(json.dumps({"facts": [stated] if quoted else []}))

    fake_anthropic.handler = handler
    job_run(job.pk)
    assert forgot == [True]
    assert asked == [True, False]  # asked again without the results
    assert not Fact.objects.filter(key="sante_hernie").exists()
    assert not Message.objects.filter(pk=old.pk).exists() or how == "fact"
