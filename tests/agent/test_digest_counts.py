"""What the digest counts, and what another run's marking does to a batch (audit 14).

Each fact is written in a transaction of its own (test_digest_write_lock.py), so a batch
can change, or the run stop, between two writes. Each fact is counted as it is written,
a merge that changes nothing is no write, and a batch another run digested meanwhile
stops the rest of the answer, as a forgotten message does."""

from __future__ import annotations

import json

import pytest

import agent.extraction
from agent.digest import digest_run
from memory.models import Digest, Fact, FactRevision, Message
from memory.services.dedup import DEDUP_SYSTEM_PROMPT
from memory.services.facts import fact_store
from memory.services.forgetting import forget_exchange_exclude
from memory.services.messages import message_save
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db(transaction=True)

ROOM = "lobby"
LYON = "Marie habite à Lyon."
LYON_PRECISE = "Marie habite à Lyon, dans le quartier de la Croix-Rousse."
SAID = ("Plus précisément à la Croix-Rousse, c'est super", "Et je fais du vélo le dimanche")
VELO = "Marie fait du vélo le dimanche."


def _system(body):
    s = body.get("system") or ""
    return "\n".join(b.get("text", "") for b in s) if isinstance(s, list) else s


def _script(
    fake, dedup=lambda shown: text_message(json.dumps({"action": "UPDATE", "id": shown[0]["id"]}))
):
    def handler(body):
        if _system(body).startswith(DEDUP_SYSTEM_PROMPT[:60]):
            shown = json.loads(body["messages"][-1]["content"])["faits_memorises"]
            return dedup(shown)
        read = body["messages"][-1]["content"]
        facts = []
        if "Croix-Rousse" in read:
            facts.append(
                {
                    "key": "marie_residence",
                    "value": LYON_PRECISE,
                    "type": "fact",
                    "sources": [1],
                    "importance": 0.6,
                }
            )
        if "vélo" in read:
            facts.append(
                {
                    "key": "marie_velo",
                    "value": VELO,
                    "type": "fact",
                    "sources": [2],
                    "importance": 0.6,
                }
            )
        return text_message(json.dumps({"facts": facts}, ensure_ascii=False))

    fake.handler = handler


def test_a_merge_restated_after_a_batch_change_is_counted_once(lobby, monkeypatch):
    """Fact 1 merges (dedup UPDATE) into an existing fact of another key; the owner
    excludes message 2 before fact 2 is written; the batch is read again and fact 1
    merges again into the same fact, changing nothing: a noop, not a second fact."""
    fact_store(key="marie_ville", value=LYON, actor="agent")
    first, second = (
        message_save(channel=ROOM, role="user", content=t, author="marie") for t in SAID
    )
    _script(lobby)
    calls = []
    real = agent.extraction.fact_candidate_store

    def wrapped(candidate, **kw):
        calls.append(candidate.key)
        if len(calls) == 2:  # between fact 1's write and fact 2's
            forget_exchange_exclude(message_ids=[second.pk])
        return real(candidate, **kw)

    monkeypatch.setattr(agent.extraction, "fact_candidate_store", wrapped)

    digest_run(trigger="manual")

    assert Fact.objects.get(key="marie_ville").value == LYON_PRECISE
    writes = FactRevision.objects.filter(fact__key="marie_ville").count() - 1
    assert writes == 1
    digest = Digest.objects.get()
    assert (digest.messages_digested, digest.facts_stored) == (1, 1)


def test_facts_written_before_a_crash_mid_batch_are_counted(lobby, monkeypatch):
    """A crash (here: an error raised) after fact 1 is written and before fact 2: the job
    is retried with the saved answer; fact 1's restatement is a noop and fact 2 is added.
    The failed run's row counts fact 1, the retry's fact 2."""
    from memory.models import Job
    from memory.services.digest import digest_request
    from memory.services.jobs import job_run

    for t in SAID:
        message_save(channel=ROOM, role="user", content=t, author="marie")
    _script(lobby, dedup=lambda shown: text_message(json.dumps({"action": "ADD", "id": None})))
    real = agent.extraction.fact_candidate_store
    state = {"n": 0}

    def wrapped(candidate, **kw):
        state["n"] += 1
        if state["n"] == 2:
            raise RuntimeError("crash")
        return real(candidate, **kw)

    monkeypatch.setattr(agent.extraction, "fact_candidate_store", wrapped)
    job = digest_request(send=False)
    assert job_run(job.id) == "retry"
    assert Fact.objects.filter(key="marie_residence").exists()  # fact 1 written
    Job.objects.filter(pk=job.pk).update(run_after=None)
    assert job_run(job.id) == "done"
    assert Fact.objects.filter(key="marie_velo").exists()
    rows = list(
        Digest.objects.order_by("id").values_list("state", "messages_digested", "facts_stored")
    )
    assert rows == [("failed", 0, 1), ("done", 2, 1)]


def test_a_batch_digested_by_another_run_meanwhile_stops_the_rest_of_the_facts(lobby, monkeypatch):
    """Two digest runs at once (a lease expired on a long batch: the sweep hands the job to
    another worker). The other run marks the batch digested between two of this run's fact
    writes: this run writes nothing more of its answer (the batch is no longer the one its
    LLM read), and marks nothing."""
    from django.utils import timezone

    said = [message_save(channel=ROOM, role="user", content=t, author="marie") for t in SAID]
    _script(lobby, dedup=lambda shown: text_message(json.dumps({"action": "ADD", "id": None})))
    real = agent.extraction.fact_candidate_store
    state = {"n": 0}

    def wrapped(candidate, **kw):
        state["n"] += 1
        if state["n"] == 2:  # the other run's marking lands here
            Message.objects.filter(pk__in=[m.pk for m in said]).update(digested_at=timezone.now())
        return real(candidate, **kw)

    monkeypatch.setattr(agent.extraction, "fact_candidate_store", wrapped)
    digest_run(trigger="manual")
    digest = Digest.objects.get()
    assert not Fact.objects.filter(key="marie_velo").exists()
    assert (digest.messages_digested, digest.facts_stored) == (0, 1)


def test_a_digest_that_lost_its_lease_writes_no_more_of_its_batch(lobby, monkeypatch):
    """A long batch (many dedup decisions, each an LLM call) outlasts the job's lease: the
    sweep hands the job to another worker, which runs the same batch. The run that lost
    its lease must stop writing (each write renews the lease while it is still its own),
    not write the rest of its answer beside the new owner's."""
    from memory.models import Job
    from memory.services.digest import digest_request
    from memory.services.jobs import job_run

    for t in SAID:
        message_save(channel=ROOM, role="user", content=t, author="marie")
    _script(lobby, dedup=lambda shown: text_message(json.dumps({"action": "ADD", "id": None})))
    real = agent.extraction.fact_candidate_store
    job = digest_request(send=False)

    def wrapped(candidate, **kw):
        result = real(candidate, **kw)
        Job.objects.filter(pk=job.pk).update(lease_token="another-worker")  # taken over
        return result

    monkeypatch.setattr(agent.extraction, "fact_candidate_store", wrapped)

    assert job_run(job.id) == "lost"

    assert Fact.objects.filter(key="marie_residence").exists()  # written while it was ours
    assert not Fact.objects.filter(key="marie_velo").exists()  # not after
    assert all(m.digested_at is None for m in Message.objects.all())  # the new owner's batch


class Killed(BaseException):
    """The worker dies (SIGKILL, OOM, power loss): nothing after it runs, no except either."""


def test_a_killed_digest_is_closed_with_its_counts_when_the_next_run_starts(lobby, monkeypatch):
    """QA 8b: the row of a run killed after writing fact 1 stayed « en cours » for good
    (the rooms page and GET /digest skip running rows): its fact was counted nowhere shown."""
    from django.utils import timezone

    import memory.services.digest as digest_service
    from memory.models import DigestState
    from memory.services.digest import (
        DIGEST_INTERRUPTED_NOTE,
        digest_request,
        digest_status_get,
    )
    from memory.services.jobs import job_run, jobs_restart_recover

    for t in SAID:
        message_save(channel=ROOM, role="user", content=t, author="marie")
    _script(lobby, dedup=lambda shown: text_message(json.dumps({"action": "ADD", "id": None})))
    real = agent.extraction.fact_candidate_store
    state = {"n": 0}

    def dies_on_the_second_fact(candidate, **kw):
        state["n"] += 1
        if state["n"] == 2:
            raise Killed
        return real(candidate, **kw)

    def never_runs(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(agent.extraction, "fact_candidate_store", dies_on_the_second_fact)
    monkeypatch.setattr(digest_service, "digest_finish", never_runs)  # no cleanup runs
    job = digest_request(send=False)
    with pytest.raises(Killed):
        job_run(job.id)
    monkeypatch.undo()

    jobs_restart_recover()  # serve starts again
    assert job_run(job.id) == "done"

    killed, rerun = Digest.objects.order_by("id")
    assert (killed.state, killed.facts_stored, killed.note) == (
        DigestState.FAILED,
        1,
        DIGEST_INTERRUPTED_NOTE,
    )
    assert killed.finished_at is not None and killed.finished_at <= timezone.now()
    assert (rerun.state, rerun.messages_digested, rerun.facts_stored) == (DigestState.DONE, 2, 1)
    assert digest_status_get().last == rerun
