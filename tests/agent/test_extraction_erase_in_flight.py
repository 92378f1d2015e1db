"""QA: a fact erased for good while a dedup decision about it is in flight.

An extraction job's candidate is close to a stored fact, so the dedup LLM is asked; the
owner erases that fact for good (POST /facts/<key>/erase) before the LLM answers, and the
LLM says UPDATE that fact. Observed (with `serve`, then here):

- the job's run fails with an internal error, « DoesNotExist: Fact matching query does
  not exist. », counted as an attempt (memory_stats, the admin);
- its retry, storing the saved candidates, finds no candidate any more and ADDs the
  statement the LLM had just matched to the erased fact: a late extraction of a message
  older than the erasure brings the erased fact's content back under another key.

Forgetting the same fact at the same moment drops the statement (dedup.fact_remember:
« forgotten while deciding: not merged »): erasing for good, the stronger act, must not
do less.
"""

from __future__ import annotations

import pytest

import agent.client
import memory.services.dedup as dedup
from agent.extraction_jobs import extraction_job_enqueue
from memory.exceptions import FactErased
from memory.models import Actor, Fact, Job
from memory.services.erasing import fact_erase
from memory.services.facts import fact_store
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.services.jobs import job_run
from memory.services.messages import message_save
from tests.agent.test_extraction_forget_in_flight import _route
from tests.fakes.anthropic import fake_anthropic  # noqa: F401
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db


def test_a_fact_erased_during_the_dedup_decision_stays_erased(
    vector_store,
    fake_anthropic,  # noqa: F811
    monkeypatch,
    settings,
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    target, _ = fact_store(key="instrument", value="David joue du violoncelle", actor=Actor.AGENT)
    question = message_save(
        channel="whatsapp",
        role="user",
        content="Mon frère David joue du violoncelle depuis dix ans.",
    )
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")

    llm_json = agent.client.llm_json
    erased: list[object] = []

    def wrapped(**kwargs):
        if kwargs.get("purpose") == "dedup" and not erased:
            # The owner erases the fact for good while the dedup LLM decides.
            erased.append(fact_erase(fact=Fact.all_objects.get(pk=target.pk), actor=Actor.USER))
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", wrapped)
    _route(
        fake_anthropic,
        extraction={
            "facts": [{"key": "violon", "value": "David joue du violoncelle depuis dix ans"}]
        },
        dedup={"action": "UPDATE", "id": target.pk},
    )
    first = job_run(job.pk)
    assert erased, "the dedup LLM was asked"
    job.refresh_from_db()
    errors = [job.error]
    # The retry (what the job sweep sends once its backoff is over).
    Job.objects.filter(pk=job.pk).update(run_after=None)
    second = job_run(job.pk)
    job.refresh_from_db()
    errors.append(job.error)
    back = list(Fact.all_objects.filter(value__icontains="violoncelle").values_list("key", "value"))
    internal = [e for e in errors if e and "DoesNotExist" in e]
    assert (internal, back) == ([], []), (first, second)


def test_a_tools_statement_whose_target_is_erased_while_deciding_is_stored_apart(
    vector_store,
    fake_anthropic,  # noqa: F811
    monkeypatch,
    settings,
):
    """A tool's statement (no message it was drawn from) is news: stored on its own, not
    an internal error (its answer read the erased row)."""
    from memory.models import FactSource
    from memory.services.dedup import fact_remember

    settings.ANTHROPIC_MAX_RETRIES = 0
    install(monkeypatch, HashEmbedder())
    target, _ = fact_store(key="instrument", value="David joue du violoncelle", actor=Actor.AGENT)
    llm_json = agent.client.llm_json

    def wrapped(**kwargs):
        if kwargs.get("purpose") == "dedup" and Fact.all_objects.filter(pk=target.pk).exists():
            fact_erase(fact=Fact.all_objects.get(pk=target.pk), actor=Actor.USER)
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", wrapped)
    _route(fake_anthropic, extraction={"facts": []}, dedup={"action": "UPDATE", "id": target.pk})

    result = fact_remember(
        key="violon",
        value="David joue du violoncelle depuis dix ans",
        source=FactSource.TOOL,
        actor=Actor.AGENT,
    )
    assert result.action == "added"
    assert not Fact.all_objects.filter(pk=target.pk).exists()
    assert Fact.objects.get(key="violon").value == "David joue du violoncelle depuis dix ans"


def test_a_target_deleted_by_a_forget_undo_does_not_drop_the_agents_statement(monkeypatch):
    """Review: a forget's undo deletes the agent's fact that held the key meanwhile
    (forgetting_restated.key_back): gone, not erased, and the statement stands."""
    fact_store(key="instrument", value="David joue du violoncelle", actor=Actor.AGENT)
    forgetting_id = topic_forget(topic="violoncelle", actor=Actor.USER).forgetting_id
    assert forgetting_id is not None
    # During the forget the agent states the key again: a fact of its own holds it.
    holder, created = fact_store(
        key="instrument", value="David joue de la guitare", actor=Actor.AGENT
    )
    assert created and holder.key == "instrument"
    message = message_save(
        channel="whatsapp",
        role="user",
        content="David joue de la guitare électrique depuis cet été.",
    )

    def decide(*, key, value, candidates):
        # The owner undoes the forget while the dedup LLM decides.
        forgetting_restore(forgetting_id=forgetting_id, actor=Actor.USER)
        return dedup.UPDATE, holder

    monkeypatch.setattr(
        dedup, "fact_candidates", lambda **kw: [dedup.Candidate(fact=holder, score=0.9)]
    )
    monkeypatch.setattr(agent.client, "llm_available", lambda: True)
    monkeypatch.setattr(dedup, "llm_decide", decide)

    try:
        dedup.fact_remember(
            key="guitare",
            value="David joue de la guitare électrique depuis cet été",
            source_message_id=message.id,
            actor=Actor.AGENT,
        )
        raised = None
    except FactErased as exc:
        raised = exc
    assert not Fact.all_objects.filter(pk=holder.pk).exists()  # the undo deleted it
    kept = list(Fact.objects.filter(value__icontains="électrique").values_list("key", "value"))
    assert raised is None and kept, (
        f"the agent's statement was dropped as erased ({raised}) though the owner erased "
        f"nothing: {list(Fact.all_objects.values_list('key', 'value', 'forgotten'))}"
    )
