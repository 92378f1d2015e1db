"""Durable jobs: enqueued once, run once, retried with a bound, swept after a lost message."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent.exceptions import LlmUnavailable
from memory.exceptions import StoreUnavailable
from memory.models import Job, JobState
from memory.services import jobs
from memory.services.jobs import job_enqueue, job_run, jobs_restart_recover, jobs_sweep

pytestmark = pytest.mark.django_db

RUNS: list[dict] = []


def _ok(payload, *, checkpoint):
    RUNS.append(payload)
    return {}


def _boom(payload, *, checkpoint):
    raise RuntimeError("panne")


DOWN: list[Exception] = []


def _down_then_up(payload, *, checkpoint):
    """A store or the LLM that answers no more while DOWN holds its error."""
    if DOWN:
        raise DOWN[0]
    RUNS.append(payload)
    return {}


@pytest.fixture(autouse=True)
def handlers(monkeypatch):
    RUNS.clear()
    monkeypatch.setitem(jobs.HANDLERS, "ok", f"{__name__}:_ok")
    monkeypatch.setitem(jobs.HANDLERS, "boom", f"{__name__}:_boom")
    monkeypatch.setitem(jobs.HANDLERS, "down", f"{__name__}:_down_then_up")
    DOWN.clear()
    sent: list[int] = []
    monkeypatch.setattr(jobs, "_send", sent.append)
    return sent


def test_enqueueing_twice_records_one_job_and_sends_it_on_commit(
    handlers, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = job_enqueue(kind="ok", key="extract:1", payload={"n": 1})
        again = job_enqueue(kind="ok", key="extract:1", payload={"n": 1})
    assert first.pk == again.pk and Job.objects.count() == 1
    assert handlers == [first.pk]


def test_a_job_runs_once_even_if_its_message_arrives_twice():
    job = job_enqueue(kind="ok", key="k", payload={"n": 1})
    assert [job_run(job.pk), job_run(job.pk)] == ["done", "skipped"]
    assert RUNS == [{"n": 1}] and Job.objects.get().state == JobState.DONE


def test_failures_back_off_and_end_failed_with_their_error(time_machine):
    time_machine.move_to(timezone.now(), tick=True)
    job = job_enqueue(kind="boom", key="k", payload={})
    outcomes = []
    for _ in range(jobs.MAX_ATTEMPTS):
        outcomes.append(job_run(job.pk))
        assert job_run(job.pk) == "skipped"  # not due before its backoff
        time_machine.shift(timedelta(hours=2))
    assert outcomes == ["retry"] * (jobs.MAX_ATTEMPTS - 1) + ["failed"]
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "panne" in job.error
    assert jobs_sweep(now=timezone.now() + timedelta(days=1)) == 0  # final


@pytest.mark.parametrize(
    "error",
    [StoreUnavailable("Qdrant injoignable"), LlmUnavailable("Anthropic surchargé")],
    ids=["store", "llm"],
)
def test_a_store_down_delays_a_job_however_long_it_lasts_and_never_fails_it(time_machine, error):
    """A down store or LLM is no failure of the job: it waits, longer as the outage lasts
    (never more than the backoff's cap), without burning its attempts, then runs."""
    time_machine.move_to(timezone.now(), tick=True)
    DOWN.append(error)
    job = job_enqueue(kind="down", key="k", payload={"n": 1})
    waits = []
    for _ in range(jobs.MAX_ATTEMPTS * 3):  # an outage of about a day
        assert job_run(job.pk) == "waiting"
        job.refresh_from_db()
        assert job.state == JobState.QUEUED and job.attempts == 0 and job.error
        waits.append(job.run_after - timezone.now())
        assert job_run(job.pk) == "skipped"  # not due before its wait
        time_machine.shift(job.run_after - timezone.now() + timedelta(seconds=1))
    assert waits[-1] > waits[0] and max(waits) <= timedelta(seconds=jobs.BACKOFF_CAP_S * 1.2)
    DOWN.clear()  # back
    assert job_run(job.pk) == "done" and RUNS == [{"n": 1}]


def test_without_an_llm_an_extraction_waits_without_burning_attempts(settings):
    settings.ANTHROPIC_API_KEY = ""
    job = job_enqueue(
        kind="extract",
        key="extract:1",
        payload={"message_ids": [], "reply_id": None, "channel": "c"},
    )
    assert job_run(job.pk) == "waiting"
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempts == 0 and job.run_after > timezone.now()


def test_the_sweep_resends_a_lost_job_and_gives_back_a_dead_workers_job(handlers):
    lost = job_enqueue(kind="ok", key="lost", payload={})
    dead = job_enqueue(kind="ok", key="dead", payload={})
    Job.objects.filter(pk=dead.pk).update(
        state=JobState.RUNNING, lease_token="x", lease_until=timezone.now() - timedelta(seconds=1)
    )
    handlers.clear()
    # The dead worker's lease is over: sent again at once. The other was sent less
    # than QUEUE_GRACE ago: left to its own message until then.
    assert jobs_sweep() == 1 and handlers == [dead.pk]
    assert jobs_sweep(now=timezone.now() + timedelta(minutes=3)) == 2
    assert sorted(handlers[1:]) == sorted([lost.pk, dead.pk])
    assert {job_run(lost.pk), job_run(dead.pk)} == {"done"}


def test_a_restart_of_the_embedded_runtime_voids_the_previous_claims():
    job = job_enqueue(kind="ok", key="k", payload={})
    Job.objects.filter(pk=job.pk).update(
        state=JobState.RUNNING, lease_token="x", lease_until=timezone.now() + timedelta(minutes=4)
    )
    assert job_run(job.pk) == "skipped"
    jobs_restart_recover()
    assert job_run(job.pk) == "done"


def test_a_failed_job_shows_with_its_error_in_the_stats_the_commands_and_the_admin(
    staff_client, vector_store, local_embedder
):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    Job.objects.create(kind="extract", key="extract:1", state=JobState.FAILED, error="Panne LLM")
    Job.objects.create(kind="extract", key="extract:2", state=JobState.DONE)

    body = staff_client.get("/api/memory/stats").json()
    assert body["jobs"]["states"] == {"queued": 0, "running": 0, "done": 1, "failed": 1}
    assert body["jobs"]["failed"] == [{"key": "extract:1", "error": "Panne LLM"}]
    stats, doctor = StringIO(), StringIO()
    call_command("memory_stats", stdout=stats)
    with pytest.raises(CommandError):  # a failed job is a difference: exit status 1
        call_command("memory_doctor", stdout=doctor)
    assert "extract:1 : Panne LLM" in stats.getvalue()
    assert "extract:1 : Panne LLM" in doctor.getvalue()
    assert "Tout est cohérent." not in doctor.getvalue()
    page = staff_client.get("/admin/memory/job/")
    assert page.status_code == 200 and "Panne LLM" in page.content.decode()
    assert staff_client.get("/admin/memory/job/add/").status_code == 403
