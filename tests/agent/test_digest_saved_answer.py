"""A digest job killed after saving the LLM's answer keeps nothing a forget took.

Order: a digest job runs, the LLM answers, the candidates are checkpointed on the job,
the worker is killed before the batch commits. The owner forgets the topic (then
erases the forget). The job's payload (shown in the admin's job rows, read by the
next run) must keep nothing of it, as an extraction job's does.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Message
from memory.selectors import facts_active
from memory.services.channels import channel_settings_set
from memory.services.digest import digest_request
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import topic_forget
from memory.services.jobs import job_run, jobs_sweep
from memory.services.messages import message_save
from tests.memory.world import index_everything

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar"
TOPIC = f"le voyage à {SECRET}"


def _llm(body: dict) -> str:
    from memory.services.forgetting_select import contains_all, topic_terms

    system = body.get("system")
    system = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    prompt = body["messages"][-1]["content"]
    if "SUJET" in system.upper() and "souvenirs" in prompt:
        data = json.loads(prompt)
        terms = topic_terms(data["sujet"])
        return json.dumps(
            {"ids": [s["id"] for s in data["souvenirs"] if contains_all(s["texte"], terms)]}
        )
    facts = []
    if SECRET in prompt:
        facts = [
            {
                "key": "sophie_voyage",
                "value": f"Sophie part en voyage à {SECRET} en août",
                "type": "event",
                "sources": [1],
            }
        ]
    return json.dumps({"facts": facts})


class Killed(BaseException):
    """The worker process dies (SIGKILL): nothing after this point runs."""


@pytest.fixture
def killed_job(vector_store, local_embedder, fake_anthropic, monkeypatch):
    fake_anthropic.handler = _llm
    channel_settings_set(channel="lobby", observed=True)
    message_save(
        channel="lobby",
        role="user",
        author="david",
        content=f"Sophie part en voyage à {SECRET} en août",
    )
    message_save(channel="lobby", role="user", author="david", content="Il pleut à Lyon")
    index_everything()
    job = digest_request()

    def die(**kwargs):
        raise Killed()

    import memory.services.digest as service_digest

    monkeypatch.setattr(service_digest, "digest_batch_commit", die)
    with pytest.raises(Killed):
        job_run(job.id)
    monkeypatch.undo()
    job.refresh_from_db()
    assert SECRET in json.dumps(job.payload, ensure_ascii=False)  # the checkpoint was saved
    return job


def test_a_forget_redacts_the_saved_answer_of_a_killed_digest_job(killed_job):
    result = topic_forget(topic=TOPIC, actor="user")
    assert result.counts["messages"] == 1
    killed_job.refresh_from_db()
    assert SECRET not in json.dumps(killed_job.payload, ensure_ascii=False), killed_job.payload


def test_an_erasure_leaves_nothing_in_a_killed_digest_job(killed_job):
    result = topic_forget(topic=TOPIC, actor="user")
    forgetting_erase(forgetting_id=result.forgetting_id, actor="user")
    killed_job.refresh_from_db()
    assert SECRET not in json.dumps(killed_job.payload, ensure_ascii=False), killed_job.payload


def test_the_killed_digest_is_done_later_exactly_once(killed_job):
    # The restart: the lease expires, the sweep hands it out, it runs again.
    jobs_sweep(now=timezone.now() + timedelta(minutes=10))
    assert job_run(killed_job.id) == "done"
    assert job_run(killed_job.id) == "skipped"
    assert facts_active().filter(key="sophie_voyage").count() == 1
    assert not Message.objects.filter(observed=True, digested_at__isnull=True).exists()


def test_forgetting_a_fact_drops_the_saved_answer_that_states_it(vector_store, local_embedder):
    """A saved item is {"sources", "candidate": {key, value, …}}: its fact is read there."""
    from memory.models import Job, JobKind, JobState
    from memory.services.facts import fact_forget, fact_store

    message = message_save(channel="lobby", role="user", author="david", content="Il pleut")
    fact, _ = fact_store(key="sophie_voyage", value=f"Sophie part à {SECRET}")
    candidate = {"key": "sophie_voyage", "value": f"Sophie part à {SECRET}", "type": "event"}
    job = Job.objects.create(
        kind=JobKind.DIGEST,
        key="digest:saved",
        state=JobState.QUEUED,
        payload={
            "trigger": "schedule",
            "digest_batch": {
                "batch": [message.id],
                "found": [{"sources": [1], "candidate": candidate}],
            },
        },
    )

    fact_forget(fact=fact, actor="user")

    job.refresh_from_db()
    assert SECRET not in json.dumps(job.payload, ensure_ascii=False), job.payload
    assert job.payload["trigger"] == "schedule"
