"""What the digest does with an LLM answer it cannot take whole (QA 8b).

An answer cut at the output cap is asked again on half the batch, down to one message; a
single message whose answer is still cut, and an answer that is not ``{"facts": [...]}``,
count an attempt of the job and, after its last, fail it visibly. None of them marks a
message digested: only an answer read whole clears its batch from `live`."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.digest import (
    DIGEST_CUT_NOTE,
    DIGEST_MAX_TOKENS,
    DIGEST_SYSTEM_PROMPT,
    DIGEST_UNUSABLE_NOTE,
)
from memory.models import Digest, DigestState, Fact, Job, JobState, Message
from memory.services.digest import digest_request
from memory.services.jobs import MAX_ATTEMPTS, job_run
from memory.services.messages import message_save
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

ROOM = "lobby"


def _room(count: int) -> list[Message]:
    return [
        message_save(
            channel=ROOM,
            role="user",
            author="david",
            content=f"Personne{n} déménage à Nantes en mars pour un nouveau travail",
        )
        for n in range(count)
    ]


def _digest_model(answer):
    """The fake's handler: ``answer(body)`` for the digest's calls; dedup's decisions ADD
    (the 40 facts look alike, each is its own)."""

    def handler(body):
        system = body.get("system") or ""
        system = system if isinstance(system, str) else system[0].get("text", "")
        if not system.startswith(DIGEST_SYSTEM_PROMPT[:60]):
            return text_message(json.dumps({"action": "ADD", "id": None}))
        return answer(body)

    return handler


def _digest_calls(fake) -> list[dict]:
    return [r.json for r in fake.message_requests if r.system.startswith(DIGEST_SYSTEM_PROMPT)]


def _numbers(body: dict) -> list[int]:
    return [int(n) for n in re.findall(r"^\[(\d+)\] ", body["messages"][-1]["content"], re.M)]


def _one_fact_each(body: dict) -> str:
    read = re.findall(r"^\[(\d+)\] .*? : Personne(\d+) ", body["messages"][-1]["content"], re.M)
    facts = [
        {
            "key": f"demenagement_personne{who}",
            "value": f"Personne{who} déménage à Nantes au mois de mars pour un nouveau travail.",
            "type": "event",
            "importance": 0.6,
            "subjects": [f"personne{who}", "déménagement"],
            "ttl": None,
            "sources": [int(n)],
        }
        for n, who in read
    ]
    return json.dumps({"facts": facts}, ensure_ascii=False)


def _run_until_it_ends(job: Job) -> list[str]:
    outcomes = []
    while not outcomes or outcomes[-1] in ("retry", "waiting"):
        Job.objects.filter(pk=job.pk).update(run_after=timezone.now() - timedelta(seconds=1))
        outcomes.append(job_run(job.id))
        assert len(outcomes) <= MAX_ATTEMPTS + 1, outcomes
    return outcomes


def _undigested() -> int:
    return Message.objects.filter(observed=True, digested_at__isnull=True).count()


def test_forty_one_fact_messages_fit_the_output_cap_of_one_call(lobby):
    """~75 tokens a fact in the asked shape: 40 facts fit DIGEST_MAX_TOKENS (1500 cut them)."""

    def model(body):
        text = _one_fact_each(body)
        cap_chars = int(body["max_tokens"]) * 3  # ~3 characters a token for this JSON
        if len(text) > cap_chars:
            return text_message(text[:cap_chars], stop_reason="max_tokens")
        return text_message(text)

    lobby.handler = _digest_model(model)
    _room(40)

    assert _run_until_it_ends(digest_request(send=False)) == ["done"]

    assert _undigested() == 0 and Fact.objects.count() == 40
    assert [body["max_tokens"] for body in _digest_calls(lobby)] == [DIGEST_MAX_TOKENS]


def test_an_answer_cut_at_the_cap_is_asked_again_on_half_the_batch_until_it_fits(lobby):
    def model(body):
        text = _one_fact_each(body)
        if len(_numbers(body)) > 10:  # more facts than the cap holds
            return text_message(text[: len(text) // 2], stop_reason="max_tokens")
        return text_message(text)

    lobby.handler = _digest_model(model)
    _room(40)

    assert _run_until_it_ends(digest_request(send=False)) == ["done"]

    read = [len(_numbers(body)) for body in _digest_calls(lobby)]
    assert read == [40, 20, 10, 10, 10, 10]  # smaller batches for the rest of the run
    assert _undigested() == 0 and Fact.objects.count() == 40
    assert Digest.objects.get().state == DigestState.DONE


def test_one_message_whose_answer_is_still_cut_fails_the_job_visibly(lobby):
    said = _room(3)
    lobby.handler = _digest_model(
        lambda body: text_message('{"facts": [{"key": "dem', stop_reason="max_tokens")
    )
    job = digest_request(send=False)

    outcomes = _run_until_it_ends(job)

    assert outcomes == ["retry"] * (MAX_ATTEMPTS - 1) + ["failed"]
    # Each attempt halves 3 -> 1 and stops there: two paid calls, not a wait forever.
    assert [len(_numbers(body)) for body in _digest_calls(lobby)] == [3, 1] * MAX_ATTEMPTS
    note = DIGEST_CUT_NOTE.format(id=said[0].id)
    job.refresh_from_db()
    assert job.state == JobState.FAILED and note in job.error
    assert {(d.state, d.note) for d in Digest.objects.all()} == {(DigestState.FAILED, note)}
    assert _undigested() == 3


@pytest.mark.parametrize(
    "answer",
    [
        "Voici les faits durables : David part en Grèce demain pour une semaine.",
        '{"faits": [{"key": "voyage_david", "value": "David part en Grèce."}]}',
        '{"facts": null}',
    ],
    ids=["prose", "other-key", "null-facts"],
)
def test_an_unusable_answer_leaves_the_batch_to_digest_and_counts_an_attempt(
    lobby, django_capture_on_commit_callbacks, answer
):
    with django_capture_on_commit_callbacks(execute=True):
        said = message_save(
            channel=ROOM, role="user", author="david", content="Je pars en Grèce demain"
        )
    lobby.handler = lambda body: text_message(answer)
    job = digest_request(send=False)

    assert job_run(job.id) == "retry"

    said.refresh_from_db()
    assert said.digested_at is None
    job.refresh_from_db()
    assert job.attempts == 1 and job.state == JobState.QUEUED
    digest = Digest.objects.get()
    assert digest.state == DigestState.FAILED and digest.messages_digested == 0
    assert digest.note.startswith(DIGEST_UNUSABLE_NOTE.split("(")[0])

    assert _run_until_it_ends(job)[-1] == "failed"
    assert _undigested() == 1


def test_an_empty_list_of_facts_is_a_batch_digested_without_facts(lobby):
    _room(2)
    lobby.handler = lambda body: text_message('{"facts": []}')

    assert _run_until_it_ends(digest_request(send=False)) == ["done"]

    assert _undigested() == 0 and Fact.objects.count() == 0
