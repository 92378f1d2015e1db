"""The work after an answer (extraction, compaction) is durable jobs, done exactly once."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.loop import handle_message
from memory.models import Fact, FactRevision, Job, JobState
from memory.services import jobs
from memory.services.jobs import job_run, jobs_sweep
from memory.services.messages import message_save
from tests.fakes.anthropic import FakeReply, text_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    return fake_anthropic


def _facts(*pairs) -> FakeReply:
    facts = [{"key": k, "value": v, "type": "fact"} for k, v in pairs]
    return text_message(json.dumps({"facts": facts}, ensure_ascii=False))


class Killed(BaseException):
    """The worker process dies (SIGKILL): nothing after this point runs."""


def test_an_answer_records_its_extraction_job_with_the_reply(world):
    world.script(text_message("Bien noté."))

    result = handle_message(channel="whatsapp", text="Je déménage à Lyon")

    job = Job.objects.get(kind="extract")
    assert job.key == f"extract:{result.reply_id}" and job.state == JobState.QUEUED
    assert job.payload["message_ids"] == result.message_ids
    assert job.payload["reply_id"] == result.reply_id


def test_an_extraction_whose_worker_died_before_marking_it_done_stores_nothing_twice(
    world, monkeypatch
):
    world.script(text_message("Bien noté."), _facts(("user_city", "Il vit à Lyon")))
    handle_message(channel="whatsapp", text="J'habite à Lyon maintenant")
    job = Job.objects.get(kind="extract")

    def die(job_id, token):
        raise Killed

    monkeypatch.setattr(jobs, "_mark_done", die)
    with pytest.raises(Killed):
        job_run(job.pk)
    monkeypatch.undo()
    assert Fact.objects.get(key="user_city").value == "Il vit à Lyon"

    # Its lease runs out; the sweep gives it back and it runs again. The LLM would
    # answer differently this time: it is not asked, the same facts are restated.
    world.script(_facts(("ville", "Il habite Lyon depuis peu")))
    later = timezone.now() + jobs.LEASE + timedelta(seconds=1)
    assert jobs_sweep(now=later) == 1
    assert job_run(job.pk) == "done"

    assert list(Fact.objects.values_list("key", flat=True)) == ["user_city"]
    assert FactRevision.objects.count() == 1
    assert len(world.message_requests) == 2  # the chat, one extraction
    job.refresh_from_db()
    assert job.state == JobState.DONE and job.payload == {}


def test_a_run_whose_lease_was_voided_meanwhile_stores_nothing(world, monkeypatch):
    world.script(text_message("Bien noté."), _facts(("user_injury", "Poignet cassé")))
    handle_message(channel="whatsapp", text="Je me suis cassé le poignet")
    job = Job.objects.get(kind="extract")
    checkpoint = jobs._checkpoint

    def restart_while_the_llm_answered(job_id, token, payload):
        jobs.jobs_restart_recover()  # serve restarted: this run's lease is void
        return checkpoint(job_id, token, payload)

    monkeypatch.setattr(jobs, "_checkpoint", restart_while_the_llm_answered)
    assert job_run(job.pk) == "lost"

    assert not Fact.objects.exists()
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempts == 0


def test_replies_that_arrive_while_a_compaction_waits_add_no_second_one(world, settings):
    settings.AGENT_COMPACTION_THRESHOLD = 6
    settings.AGENT_COMPACTION_KEEP_LAST = 2
    for i in range(5):
        message_save(channel="whatsapp", role="user", content=f"Message ancien {i}")
    world.handler = lambda body: text_message("D'accord.")

    handle_message(channel="whatsapp", text="Premier")
    handle_message(channel="whatsapp", text="Deuxième")

    assert Job.objects.filter(kind="compact").count() == 1
    assert Job.objects.filter(kind="extract").count() == 2
