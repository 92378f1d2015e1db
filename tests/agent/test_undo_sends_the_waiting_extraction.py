"""The undo of a topic forget sends the extraction that waited for it, whenever it lands (QA 5).

An extraction whose exchange a forget took waits for the undo, which sends it, or for the
purge, which ends it. The undo commits from another request (the owner on /memory) while
the worker runs the job: before, an undo landing between the job's read of the exchange
and its check for a forget ended the job « messages gone » (the exchange came back, never
extracted); one landing between that check and the job's wait left it parked until the
purge date (the undo sends queued jobs only: this one was running); and the undo of a
forget that took the first of two messages answered together sent nothing (it looked for
jobs keyed on the messages it gave back; this one is keyed on the reply).
"""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

import agent.extraction_jobs as extraction_jobs
from agent.extraction_jobs import extraction_job_enqueue
from memory.models import Actor, Fact, Job, JobState
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.services.jobs import job_run
from memory.services.messages import message_save
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db

TRIP = {"key": "voyage_lisbonne", "value": "Voyage à Lisbonne du 3 au 17 août", "type": "event"}


def _exchange(text: str) -> Job:
    question = message_save(channel="whatsapp", role="user", content=text)
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    return extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")


def test_an_undo_landing_between_the_read_and_the_forget_check_keeps_the_extraction(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
    monkeypatch,
):
    """The job reads the exchange (forgotten: nothing), the owner's undo commits, then the
    job asks whether a forget still holds it: none does. Before, it ended "done" with
    nothing extracted, the exchange back; it reads the exchange again."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    job = _exchange("Je pars en voyage à Lisbonne du 3 au 17 août.")
    result = topic_forget(topic="Lisbonne", actor=Actor.USER)
    real_wait = extraction_jobs._wait_for_undo

    def undo_lands_now(ids):
        # The owner clicks "Annuler l'oubli" on /memory: it commits right here.
        forgetting_restore(forgetting_id=result.forgetting_id, actor=Actor.USER)
        return real_wait(ids)

    monkeypatch.setattr(extraction_jobs, "_wait_for_undo", undo_lands_now)
    fake_anthropic.script(text_message(json.dumps({"facts": [TRIP]})))
    job_run(job.pk)
    monkeypatch.setattr(extraction_jobs, "_wait_for_undo", real_wait)

    job.refresh_from_db()
    # The exchange is live again: its extraction must still be to do (or done with facts).
    assert Fact.objects.filter(key="voyage_lisbonne").exists() or job.state == JobState.QUEUED, (
        f"extraction dropped: job {job.state}, facts none"
    )


def test_an_undo_landing_while_the_job_runs_makes_it_due_at_once(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
    monkeypatch,
):
    """The job found the forget active and parks itself until the purge date; the undo
    commits meanwhile, and its jobs_send touches queued jobs only (this one is running).
    Before, the job then waited the whole window (7 days) with its exchange back; once
    parked, it asks again and is due at once."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    job = _exchange("Je pars en voyage à Lisbonne du 3 au 17 août.")
    result = topic_forget(topic="Lisbonne", actor=Actor.USER)
    real_wait = extraction_jobs._wait_for_undo

    def check_then_undo(ids):
        try:
            return real_wait(ids)
        finally:
            forgetting_restore(forgetting_id=result.forgetting_id, actor=Actor.USER)

    monkeypatch.setattr(extraction_jobs, "_wait_for_undo", check_then_undo)
    assert job_run(job.pk) == "waiting"
    monkeypatch.setattr(extraction_jobs, "_wait_for_undo", real_wait)

    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    # The undo "sends it": it must be due now, not a week later.
    assert job.run_after is None or job.run_after <= timezone.now(), (
        f"parked until {job.run_after} although the undo gave the exchange back"
    )


def test_the_undo_of_one_of_two_messages_answered_together_sends_their_extraction(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
):
    """Two messages answered together (the agent coalesces them; an outside agent records
    them so): the reply answers the last one. A forget takes the first message alone, the
    exchange's extraction waits for the undo. Before, the undo sent the jobs keyed on the
    messages it gave back, not this one, keyed on the reply: it stayed parked a week."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    first = message_save(channel="whatsapp", role="user", content="Je pars à Lisbonne le 3 août.")
    second = message_save(channel="whatsapp", role="user", content="Et mon vélo est réparé.")
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté pour les deux !", reply_to_id=second.id
    )
    job = extraction_job_enqueue(
        message_ids=[first.id, second.id], reply_id=reply.id, channel="whatsapp"
    )
    result = topic_forget(topic="Lisbonne", actor=Actor.USER)
    from memory.models import Message

    assert Message.all_objects.get(pk=first.pk).forgetting_id == result.forgetting_id
    assert Message.objects.filter(pk=second.pk).exists()
    assert job_run(job.pk) == "waiting"

    forgetting_restore(forgetting_id=result.forgetting_id, actor=Actor.USER)

    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    assert job.run_after is None or job.run_after <= timezone.now(), (
        f"the undo did not send the exchange's extraction: parked until {job.run_after}"
    )


def test_an_undo_landing_after_the_llm_read_the_exchange_keeps_its_facts(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
    monkeypatch,
):
    """The forget lands while the LLM reads the exchange; the undo lands between the job's
    look at the exchange after the answer and its check for a forget: the answer is about
    an exchange in memory again, and its facts are stored."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    job = _exchange("Je pars en voyage à Lisbonne du 3 au 17 août.")
    fake_anthropic.script(text_message(json.dumps({"facts": [TRIP]})))
    forgets = []
    real_extract = extraction_jobs.facts_extract

    def read_then_forget(**kwargs):
        answer = real_extract(**kwargs)
        forgets.append(topic_forget(topic="Lisbonne", actor=Actor.USER))
        assert forgets[-1].forgetting_id is not None
        return answer

    real_wait = extraction_jobs._wait_for_undo

    def undo_lands_now(ids):
        if forgets:
            forgetting_restore(forgetting_id=forgets.pop().forgetting_id, actor=Actor.USER)
        return real_wait(ids)

    monkeypatch.setattr(extraction_jobs, "facts_extract", read_then_forget)
    monkeypatch.setattr(extraction_jobs, "_wait_for_undo", undo_lands_now)
    assert job_run(job.pk) == "done"

    assert Fact.objects.filter(key="voyage_lisbonne").exists()
