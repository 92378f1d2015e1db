"""A part that fails (the LLM refusing, the embedder answering garbage, a forget undone)
delays the background work of an exchange or a room; it never drops it silently."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.digest import digest_run_now
from agent.extraction_jobs import extraction_job_enqueue
from memory.exceptions import EmbeddingInvalid
from memory.models import Actor, Fact, Job, JobState, Message
from memory.services.channels import channel_settings_set
from memory.services.forgetting import forgetting_restore, forgettings_purge, topic_forget
from memory.services.jobs import job_run
from memory.services.maintenance_runs import doctor_run
from memory.services.messages import message_save
from tests.fakes.anthropic import error_reply, text_message
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db

CREDIT = "Your credit balance is too low to access the Anthropic API."
BROTHER = json.dumps(
    {"facts": [{"key": "brother_city", "value": "David habite à Toulouse", "type": "fact"}]},
    ensure_ascii=False,
)


def _exchange(text: str = "Mon frère David habite à Toulouse.") -> Job:
    question = message_save(channel="whatsapp", role="user", content=text)
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    return extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")


def _run_until_settled(job: Job) -> str:
    outcome = ""
    for _ in range(10):
        Job.objects.filter(pk=job.pk, state=JobState.QUEUED).update(run_after=None)
        outcome = job_run(job.pk)
        if outcome in ("done", "failed"):
            break
    return outcome


def test_an_extracted_fact_reaches_t1_when_the_embedder_answers_garbage(
    vector_store, fake_anthropic, monkeypatch, settings
):
    """The embedder answers vectors it should not (EmbeddingInvalid) during dedup: the fact
    is stored all the same, and the indexing machine marks its row failed."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    job = _exchange()
    embedder.error = EmbeddingInvalid("vecteur 0 de dimension 1024 au lieu de 64")
    fake_anthropic.script(text_message(BROTHER))
    assert job_run(job.pk) == "done"
    assert Fact.objects.get(key="brother_city").value == "David habite à Toulouse"


def test_an_extraction_the_llm_refuses_fails_visibly_and_runs_again_once_fixed(
    vector_store, local_embedder, fake_anthropic, settings
):
    """Anthropic refuses the request (a 400: credit exhausted): the job is not 'done' with
    no facts; it ends failed with the error, and `memory_doctor --fix` sends it again."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    job = _exchange()
    fake_anthropic.script(*[error_reply(400, "invalid_request_error", CREDIT)] * 5)
    assert _run_until_settled(job) == "failed"
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "credit" in job.error
    report = "\n".join(doctor_run().lines)
    assert "credit" in report and "relancez avec --fix" in report
    assert "1 tâche(s) de fond en échec relancée(s)" in doctor_run(fix=True).lines
    fake_anthropic.script(text_message(BROTHER))
    assert _run_until_settled(job) == "done"
    assert Fact.objects.filter(key="brother_city").exists()


def test_a_digest_the_llm_refuses_leaves_the_room_to_digest(
    vector_store, local_embedder, fake_anthropic, settings, django_capture_on_commit_callbacks
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel="lobby", observed=True)
    with django_capture_on_commit_callbacks(execute=True):
        trip = message_save(
            channel="lobby", role="user", author="david", content="Je pars en Grèce demain"
        )
    fake_anthropic.script(error_reply(400, "invalid_request_error", CREDIT))
    with django_capture_on_commit_callbacks(execute=True):
        outcome, _ = digest_run_now()
    assert outcome == "retry"
    trip.refresh_from_db()
    assert trip.digested_at is None  # still to digest


def test_an_exchange_a_forget_gives_back_is_still_extracted(
    vector_store, local_embedder, fake_anthropic, settings
):
    """Its job came due while the exchange was forgotten: it waits for the undo (or the
    purge, which ends it), and the undo sends it."""
    settings.ANTHROPIC_MAX_RETRIES = 0
    job = _exchange("Je pars en voyage à Lisbonne du 3 au 17 août.")
    result = topic_forget(topic="Lisbonne", actor=Actor.USER)
    assert job_run(job.pk) == "waiting"
    forgetting_restore(forgetting_id=result.forgetting_id, actor=Actor.USER)
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.run_after is None
    trip = {"key": "voyage_lisbonne", "value": "Voyage à Lisbonne du 3 au 17 août"}
    fake_anthropic.script(text_message(json.dumps({"facts": [{**trip, "type": "event"}]})))
    assert job_run(job.pk) == "done"
    assert Fact.objects.filter(key="voyage_lisbonne").exists()

    other = _exchange("Le voyage à Porto est annulé.")
    topic_forget(topic="Porto", actor=Actor.USER)
    assert job_run(other.pk) == "waiting"
    forgettings_purge(now=timezone.now() + timedelta(days=30))
    Job.objects.filter(pk=other.pk).update(run_after=None)
    assert job_run(other.pk) == "done"  # gone for good: nothing to extract
    assert not Message.all_objects.filter(content__contains="Porto").exists()
