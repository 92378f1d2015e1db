"""The digest of the observed rooms, through the real client against the fake Messages API."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agent.digest import DIGEST_CRASHED_NOTE, digest_run_now
from agent.models import LlmUsage
from memory.models import Digest, DigestState, Fact, FactRevision, IndexState, Job, Message
from memory.services import digest as digest_service
from memory.services.channels import channel_settings_set
from memory.services.messages import message_save
from memory.stores.vectors import LIVE, get_vector_store, point_id
from tests.fakes.anthropic import server_error, text_message

pytestmark = pytest.mark.django_db

ROOM = "lobby"


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, eager_tasks, settings):
    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel=ROOM, observed=True)
    return fake_anthropic


def room(capture, *texts: str, author: str = "david") -> list[Message]:
    with capture(execute=True):
        return [message_save(channel=ROOM, role="user", content=t, author=author) for t in texts]


def live_ids() -> set[str]:
    return set(get_vector_store().iter_ids(LIVE))


def facts_answer(*facts: tuple[str, str, list[int]]) -> str:
    return json.dumps(
        {
            "facts": [
                {"key": k, "value": v, "type": "event", "sources": s, "ttl": "30d"}
                for k, v, s in facts
            ]
        }
    )


def run(capture):
    with capture(execute=True):
        return digest_run_now()


def test_a_digest_stores_the_durable_facts_once_with_provenance_and_clears_live(
    world, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    trip, chatter = room(capture, "Je pars en Grèce demain pour une semaine", "Il pleut sur Paris")
    assert live_ids() == {point_id("message", trip.id), point_id("message", chatter.id)}
    world.script(text_message(facts_answer(("voyage_david", "David part en Grèce.", [1]))))

    outcome, digest = run(capture)

    assert outcome == "done"
    assert digest["messages"] == 2 and digest["facts"] == 1 and digest["state"] == "done"
    fact = Fact.objects.get(key="voyage_david")
    assert fact.source_message_id == trip.id and fact.channel == ROOM
    assert f"#{trip.id}" in FactRevision.objects.get(fact=fact).note
    assert LlmUsage.objects.filter(purpose="digest").count() == 1
    assert live_ids() == set()  # cleared: the points went through the indexing machine
    for message in (trip, chatter):
        message.refresh_from_db()
        assert message.digested_at is not None and message.index_state == IndexState.INDEXED
    prompt = world.message_requests[0].messages[0]["content"]
    assert "[1] david (lobby, " in prompt and "Je pars en Grèce" in prompt

    # Twice: nothing left to digest, no LLM call, no fact twice.
    outcome, digest = run(capture)
    assert outcome == "done" and digest["messages"] == 0
    assert Fact.objects.filter(key="voyage_david").count() == 1
    assert FactRevision.objects.filter(fact=fact).count() == 1
    assert len(world.message_requests) == 1
    assert Message.objects.filter(pk__in=[trip.id, chatter.id]).count() == 2  # T1 keeps them


def test_a_digest_failing_half_way_clears_nothing_it_did_not_digest(
    world, django_capture_on_commit_callbacks, monkeypatch
):
    capture = django_capture_on_commit_callbacks
    monkeypatch.setattr(digest_service, "DIGEST_BATCH", 2)
    first = room(capture, "Marie commence un nouveau travail lundi", "Bravo Marie")
    second = room(capture, "Paul a adopté un chien nommé Rex", "Il est trop mignon")
    world.script(
        text_message(facts_answer(("travail_marie", "Marie commence un travail lundi.", [1]))),
        server_error(),
    )

    outcome, digest = run(capture)

    # The LLM is down (5xx after its retries): the job waits, its attempts untouched.
    assert outcome == "waiting" and digest["state"] == "failed"
    assert Fact.objects.filter(key="travail_marie").exists()
    assert not Fact.objects.filter(key__contains="paul").exists()
    assert live_ids() == {point_id("message", m.id) for m in second}
    assert all(m.digested_at is None for m in Message.objects.filter(pk__in=[m.id for m in second]))
    assert all(m.digested_at for m in Message.objects.filter(pk__in=[m.id for m in first]))

    # The job retries later; the rest is digested then, nothing twice.
    job = Job.objects.get(kind="digest")
    Job.objects.filter(pk=job.pk).update(run_after=None)
    world.script(text_message(facts_answer(("chien_paul", "Paul a un chien, Rex.", [1]))))
    from memory.services.jobs import job_run

    with capture(execute=True):
        assert job_run(job.id) == "done"
    assert live_ids() == set()
    assert Fact.objects.filter(key="travail_marie").count() == 1
    assert Fact.objects.get(key="chien_paul").source_message_id == second[0].id


def test_a_digest_whose_store_raises_marks_nothing_of_the_batch(
    world, django_capture_on_commit_callbacks, monkeypatch
):
    capture = django_capture_on_commit_callbacks
    said = room(capture, "Je déménage à Nantes en mars")
    world.script(text_message(facts_answer(("demenagement", "Il déménage à Nantes.", [1]))))

    def broken(*args, **kwargs):
        raise RuntimeError("disque plein")

    monkeypatch.setattr("agent.extraction.fact_candidate_store", broken)
    outcome, digest = run(capture)

    # The owner reads a French note; the error itself is in the log (QA: class names shown).
    assert outcome == "retry" and digest["note"] == DIGEST_CRASHED_NOTE
    said[0].refresh_from_db()
    assert said[0].digested_at is None
    assert live_ids() == {point_id("message", said[0].id)}

    # The retry stores the LLM's saved answer: no second call, the fact once.
    monkeypatch.undo()
    job = Job.objects.get(kind="digest")
    Job.objects.filter(pk=job.pk).update(run_after=None)
    from memory.services.jobs import job_run

    with capture(execute=True):
        assert job_run(job.id) == "done"
    assert len(world.message_requests) == 1
    assert Fact.objects.get(key="demenagement").source_message_id == said[0].id
    assert live_ids() == set()


def test_without_an_llm_the_digest_waits_says_why_and_clears_nothing(
    world, django_capture_on_commit_callbacks, settings
):
    capture = django_capture_on_commit_callbacks
    said = room(capture, "Je pars en Grèce demain")
    settings.ANTHROPIC_API_KEY = ""

    with pytest.raises(CommandError, match="Aucun LLM n'est configuré"):
        with capture(execute=True):
            call_command("memory_digest")

    said[0].refresh_from_db()
    assert said[0].digested_at is None
    assert live_ids() == {point_id("message", said[0].id)}
    assert Digest.objects.get().state == DigestState.WAITING
    job = Job.objects.get(kind="digest")
    assert job.state == "queued" and job.attempts == 0 and job.run_after is not None
    assert world.message_requests == []


def test_the_schedule_enqueues_one_digest_per_fixed_hour_and_catches_up(db, settings):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    settings.DIGEST_HOURS = [2, 6, 10, 14, 18, 22]
    paris = ZoneInfo("Europe/Paris")
    at = datetime(2026, 11, 24, 11, 30, tzinfo=paris)
    assert digest_service.digest_slot_last(at) == datetime(2026, 11, 24, 10, tzinfo=paris)
    assert digest_service.digest_slot_next(at) == datetime(2026, 11, 24, 14, tzinfo=paris)
    assert digest_service.digest_slot_last(datetime(2026, 11, 24, 1, tzinfo=paris)) == datetime(
        2026, 11, 23, 22, tzinfo=paris
    )

    # serve starts at 11:30 after missing 10:00: one job, and only one.
    job = digest_service.digest_schedule_check(now=at)
    assert job is not None and job.key.startswith("digest:2026-11-24T10:00")
    assert digest_service.digest_schedule_check(now=at) is None
    Job.objects.filter(pk=job.pk).update(state="done")
    Digest.objects.create(state=DigestState.DONE, started_at=at)
    assert digest_service.digest_schedule_check(now=at) is None
    # At 14:00 the next one.
    later = datetime(2026, 11, 24, 14, 0, 30, tzinfo=paris)
    assert digest_service.digest_schedule_check(now=later).key.startswith("digest:2026-11-24T14:00")


def test_forcing_a_waiting_digest_runs_it_now_once_an_llm_is_configured(
    world, django_capture_on_commit_callbacks, settings
):
    capture = django_capture_on_commit_callbacks
    said = room(capture, "Paul a adopté un chien nommé Rex")
    settings.ANTHROPIC_API_KEY = ""
    with pytest.raises(CommandError, match="Aucun LLM"):
        call_command("memory_digest")
    with pytest.raises(CommandError, match="Aucun LLM"):  # still says why, not "in progress"
        call_command("memory_digest")
    settings.ANTHROPIC_API_KEY = world.api_key
    world.script(text_message(facts_answer(("chien_paul", "Paul a un chien, Rex.", [1]))))

    outcome, digest = run(capture)

    assert outcome == "done" and digest["facts"] == 1
    assert Job.objects.filter(kind="digest").count() == 1
    said[0].refresh_from_db()
    assert said[0].digested_at is not None and live_ids() == set()
