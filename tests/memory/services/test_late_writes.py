"""Writes decided before the owner acted never undo what the owner did since.

Each test puts the owner's act (a forget, an edit, an expiry removed) inside the
agent's slow step (an LLM call, the purge's loop, a job killed and run again),
then checks the owner's act stands.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

import agent.client
import agent.extraction_jobs as extraction_jobs
import memory.services.expiry as expiry
from agent.extraction_jobs import exchange_facts_save, extraction_job_enqueue
from memory.models import Actor, Fact, FactKind, Job
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.jobs import job_run, jobs_sweep
from memory.services.messages import message_save
from memory.services.self_memory import agent_item_store
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

BROTHER = json.dumps(
    {"facts": [{"key": "brother_city", "value": "David habite à Toulouse", "type": "fact"}]},
    ensure_ascii=False,
)


def _exchange(text: str = "Mon frère David habite à Toulouse."):
    question = message_save(channel="whatsapp", role="user", content=text)
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    return question, reply


def test_the_purge_leaves_a_fact_whose_expiry_the_owner_removed_while_it_ran(monkeypatch):
    first, _ = fact_store(key="a_mood", value="fatigué", ttl="1h", actor=Actor.AGENT)
    second, _ = fact_store(key="b_parking", value="Garé niveau -2", ttl="1h", actor=Actor.AGENT)
    Fact.objects.filter(pk__in=[first.pk, second.pk]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    record = expiry.revision_record
    kept: list[int] = []

    def owner_keeps_the_other(**kwargs):
        # The purge has listed both and expires one: the owner keeps the other for good.
        if not kept:
            kept.append(second.pk if kwargs["fact"].pk == first.pk else first.pk)
            fact_update(fact=Fact.all_objects.get(pk=kept[0]), actor=Actor.USER, ttl="")
        return record(**kwargs)

    monkeypatch.setattr(expiry, "revision_record", owner_keeps_the_other)
    assert expiry.expired_purge() == 1
    fact = Fact.all_objects.get(pk=kept[0])
    assert (fact.forgotten, fact.expires_at) == (False, None)
    assert fact.revisions.first().reason != "expired"


def test_an_extraction_read_before_the_owner_forgot_does_not_bring_the_fact_back(
    vector_store, local_embedder, fake_anthropic, monkeypatch
):
    fact, _ = fact_store(key="brother_city", value="David habite à Toulouse", actor=Actor.AGENT)
    question, reply = _exchange()
    llm_json = agent.client.llm_json

    def owner_forgets_meanwhile(**kwargs):
        fact_forget(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER)
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", owner_forgets_meanwhile)
    fake_anthropic.script(text_message(BROTHER))
    report = exchange_facts_save(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    assert report.actions == {"noop": 1}  # said so, not "updated"
    after = Fact.all_objects.get(pk=fact.pk)
    assert after.forgotten
    assert after.revisions.first().reason == "forgotten"


class _Killed(BaseException):
    """The worker dies before it marks the job done."""


def test_an_extraction_job_run_again_after_the_owner_forgot_does_not_bring_the_fact_back(
    vector_store, local_embedder, fake_anthropic, monkeypatch
):
    question, reply = _exchange()
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    fake_anthropic.script(text_message(BROTHER))
    store = extraction_jobs.fact_candidate_store

    def store_then_die(*args, **kwargs):
        store(*args, **kwargs)
        raise _Killed()

    monkeypatch.setattr(extraction_jobs, "fact_candidate_store", store_then_die)
    with pytest.raises(_Killed):
        job_run(job.id)
    monkeypatch.setattr(extraction_jobs, "fact_candidate_store", store)
    fact = Fact.objects.get(key="brother_city")
    fact_forget(fact=fact, actor=Actor.USER)
    Job.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(days=1))
    jobs_sweep()
    assert job_run(job.id) == "done"
    assert fake_anthropic.pending == 0  # its saved answer, not a second LLM call
    assert Fact.all_objects.get(pk=fact.pk).forgotten


def test_a_later_message_stating_a_fact_the_owner_forgot_starts_a_new_one(
    vector_store, local_embedder, fake_anthropic
):
    """News after the forget is kept, as a new fact: the forgotten one (its history, its
    subjects) stays forgotten, set aside, for the owner alone to restore."""
    fact, _ = fact_store(key="brother_city", value="David habite à Toulouse", actor=Actor.AGENT)
    fact_forget(fact=fact, actor=Actor.USER)
    question, reply = _exchange("Au fait, mon frère David habite toujours à Toulouse.")
    fake_anthropic.script(text_message(BROTHER))
    exchange_facts_save(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    news = Fact.objects.get(key="brother_city")
    assert news.pk != fact.pk and news.source_message_id == question.id
    assert Fact.all_objects.get(pk=fact.pk).forgotten


def _pdf_limitation():
    """The agent states a limitation of its own (the rules decide: no LLM call)."""
    return agent_item_store(
        kind=FactKind.SELF,
        category="limitation",
        content="Je ne peux pas lire les PDF",
        use_llm=False,
    )


def test_a_late_supersede_leaves_an_item_the_owner_rewrote_whole(
    vector_store, local_embedder, fake_anthropic, monkeypatch
):
    old = _pdf_limitation().item
    llm_json = agent.client.llm_json

    def owner_rewrites_meanwhile(**kwargs):
        fact_update(
            fact=Fact.all_objects.get(pk=old.pk),
            actor=Actor.USER,
            value="Je ne peux pas lire les PDF scannés",
        )
        return llm_json(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", owner_rewrites_meanwhile)
    fake_anthropic.script(text_message(f'{{"action": "SUPERSEDE", "id": {old.pk}}}'))
    result = agent_item_store(
        kind=FactKind.SELF, category="capability", content="Je peux lire les PDF"
    )
    item = Fact.all_objects.get(pk=old.pk)
    assert (item.value, item.category) == ("Je ne peux pas lire les PDF scannés", "limitation")
    # What the agent learnt is kept beside it.
    assert result.action == "added" and result.item.pk != old.pk
    assert result.item.category == "capability"


def test_an_edit_with_the_owners_token_is_the_owners(owner_api, agent_api):
    fact_store(key="city", value="Lyon", actor=Actor.AGENT)
    response = owner_api.patch(
        "/api/v1/memory/facts/city", {"value": "Paris", "importance": 0.9}, format="json"
    )
    assert response.status_code == 200
    fact = Fact.objects.get(key="city")
    assert fact.revisions.first().actor == Actor.USER
    assert {"value", "importance"} <= set(fact.owner_fields)
    fact_store(key="city", value="Lyon", importance=0.5, actor=Actor.AGENT)
    fact.refresh_from_db()
    assert (fact.value, fact.importance) == ("Paris", 0.9)
    # The agent's token (a plain account's) still writes as the agent.
    response = agent_api.patch("/api/v1/memory/facts/city", {"subjects": ["ville"]}, format="json")
    assert response.status_code == 200
    assert Fact.objects.get(key="city").revisions.first().actor == Actor.AGENT


def test_the_agent_gives_no_expiry_to_a_fact_the_owner_wrote(owner_api, time_machine):
    response = owner_api.post(
        "/api/v1/memory/facts",
        {"key": "allergy", "value": "Allergique à la pénicilline", "importance": 1.0},
        format="json",
    )
    assert response.status_code == 201, response.content
    fact_store(key="allergy", value="Allergique à la pénicilline", ttl="1h", actor=Actor.AGENT)
    time_machine.move_to(timezone.now() + timedelta(hours=2))
    expiry.expired_purge()
    fact = Fact.all_objects.get(key="allergy")
    assert (fact.forgotten, fact.expires_at) == (False, None)
    # On a fact the agent learnt, its TTL still counts.
    fact_store(key="parking", value="Garé niveau -2", actor=Actor.AGENT)
    fact_store(key="parking", value="Garé niveau -2", ttl="1h", actor=Actor.AGENT)
    assert Fact.objects.get(key="parking").expires_at is not None


def test_a_value_the_owner_rewrote_does_not_expire_with_the_agents_ttl(owner_api, time_machine):
    """The agent learnt the parking spot for an hour; the owner rewrote it: the owner's
    value keeps the expiry the owner gave it, none here (kept for good)."""
    fact_store(key="parking", value="Garé niveau -2", ttl="1h", actor=Actor.AGENT)
    fact_store(key="train", value="Train à 7h40", ttl="1h", actor=Actor.AGENT)
    response = owner_api.patch(
        "/api/v1/memory/facts/parking", {"value": "Garé au niveau -3, place 42"}, format="json"
    )
    assert response.status_code == 200, response.content
    response = owner_api.patch(  # an owner who says how long it lasts is heard
        "/api/v1/memory/facts/train",
        {"value": "Train à 7h45", "ttl": "1h"},
        format="json",
    )
    assert response.status_code == 200, response.content
    time_machine.move_to(timezone.now() + timedelta(hours=2))
    expiry.expired_purge()
    parking = Fact.all_objects.get(key="parking")
    assert (parking.forgotten, parking.expires_at) == (False, None)
    assert parking.value == "Garé au niveau -3, place 42"
    assert Fact.all_objects.get(key="train").forgotten


@pytest.mark.parametrize("rewritten", [True, False], ids=["text-and-category", "category-alone"])
def test_the_agent_restating_a_self_item_leaves_the_category_the_owner_gave_it(
    vector_store, local_embedder, rewritten
):
    """The owner moved the agent's limitation to a preference (rewording it or not); the
    agent states its first words again (same key): the owner's category stays."""
    item = _pdf_limitation().item
    value = "Je préfère ne pas lire les PDF" if rewritten else item.value
    fact_update(fact=item, actor=Actor.USER, value=value, category="preference")
    _pdf_limitation()
    after = Fact.all_objects.get(pk=item.pk)
    assert (after.value, after.category) == (value, "preference")
    # An item the owner never touched still follows what the agent learns.
    other = agent_item_store(
        kind=FactKind.SELF, category="limitation", content="Je ne peux pas envoyer de SMS"
    ).item
    fact_update(fact=other, actor=Actor.AGENT, category="capability")
    assert Fact.all_objects.get(pk=other.pk).category == "capability"


def test_the_agents_token_cannot_bring_back_by_an_edit_a_fact_the_owner_forgot(
    owner_api, agent_api
):
    """Undoing a forget is the owner's (POST …/restore answers the agent 403): a PATCH of
    any field by the agent's token finds no such fact (404, as a key never stored), and the
    fact stays forgotten."""
    created = owner_api.post(
        "/api/v1/memory/facts", {"key": "ex_address", "value": "Rue Victor Hugo"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert owner_api.delete("/api/v1/memory/facts/ex_address").status_code == 204
    assert agent_api.post("/api/v1/memory/facts/ex_address/restore").status_code == 403
    response = agent_api.patch(
        "/api/v1/memory/facts/ex_address", {"importance": 0.4}, format="json"
    )
    assert response.status_code == 404 and "Aucun fait" in response.json()["message"]
    assert Fact.all_objects.get(key="ex_address").forgotten
    # The owner's own edit of it is a restore, as before.
    response = owner_api.patch(
        "/api/v1/memory/facts/ex_address", {"importance": 0.4}, format="json"
    )
    assert response.status_code == 200 and not Fact.objects.get(key="ex_address").forgotten
