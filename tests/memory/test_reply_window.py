# ruff: noqa: F811 (the fixtures are imported from the exchange tests)
"""The reply window (messages.REPLY_WINDOW) is measured from the question a message would
answer, by our clock: an assistant message recorded later answers nothing (a reminder);
one within it goes with its question, forgotten or erased, whenever the erasure came.

Review of 8bb8e73: the window was measured from an earlier part of the reply, from the
erasure, or from a gateway's clock running ahead; each part of a reply recorded its own
extraction of the question."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Job, Message
from memory.services.erasing import forgetting_erase
from tests.memory.test_reply_goes_with_its_question import (  # noqa: F401
    QUESTION,
    _forget,
    _record,
    greeted,
    world,
)

pytestmark = pytest.mark.django_db

REMINDER = "Rappel : rendez-vous chez le dentiste demain à 9 h."


def test_a_reminder_18_minutes_after_a_forgotten_question_is_not_swallowed_by_an_earlier_reply_part(
    greeted, agent_api, time_machine
):
    """The window is 'more than 10 minutes after the QUESTION it would answer', but it is
    measured from the last reply part: a reply 9 min after the question, then a reminder 9 min
    after that (18 min after the question) goes with the forget."""
    _forget()
    time_machine.move_to(timezone.now() + timedelta(minutes=9))
    assert _record(agent_api, "Courage pour ta hernie.", role="assistant").status_code == 201
    time_machine.move_to(timezone.now() + timedelta(minutes=9))

    sent = _record(agent_api, REMINDER, role="assistant")

    assert sent.status_code == 201, sent.content
    assert Message.objects.filter(pk=sent.json()["message_ids"][0]).exists(), (
        "a reminder 18 minutes after the question was swallowed by its forget"
    )


def test_a_reminder_15_minutes_after_an_erased_question_is_recorded(
    greeted, agent_api, time_machine
):
    """The erasure check compares the reply's moment with the ERASURE's time, not the
    question's: erased 9 min after it was asked, a reminder 15 min after the question
    (6 after the erasure) is refused although it is 'no reply'."""
    time_machine.move_to(timezone.now() + timedelta(minutes=9))
    forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER)
    time_machine.move_to(timezone.now() + timedelta(minutes=6))

    sent = _record(agent_api, REMINDER, role="assistant")

    assert sent.status_code == 201, sent.content


def test_a_backdated_reply_to_a_question_erased_after_the_window_is_refused(
    greeted, agent_api, time_machine
):
    """A gateway delivers late a reply written 1 minute after the question, with its
    original timestamp. The owner erased the question 12 minutes after it was asked: no
    open-question mark was left, so the reply is stored live, naming the erased topic.
    The same reply after a mere forget goes with the question (the forgotten path uses the
    reply's moment; the erasure path decided at erasure time)."""
    asked = Message.all_objects.get(pk=greeted).created_at
    time_machine.move_to(timezone.now() + timedelta(minutes=12))
    forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER)

    sent = _record(
        agent_api,
        "Courage pour ta hernie discale, repose-toi bien.",
        role="assistant",
        timestamp=(asked + timedelta(minutes=1)).isoformat(),
    )

    assert sent.status_code == 400, sent.content
    assert not Message.objects.filter(content__contains="hernie").exists()


def test_a_backdated_reply_to_a_forgotten_question_goes_with_it_control(
    greeted, agent_api, time_machine
):
    """Control for the test above: a forget (not an erasure) handles the same order."""
    asked = Message.all_objects.get(pk=greeted).created_at
    time_machine.move_to(timezone.now() + timedelta(minutes=12))
    _forget()

    sent = _record(
        agent_api,
        "Courage pour ta hernie discale, repose-toi bien.",
        role="assistant",
        timestamp=(asked + timedelta(minutes=1)).isoformat(),
    )

    assert sent.status_code == 201, sent.content
    assert not Message.objects.filter(content__contains="hernie").exists()


def test_a_reply_from_a_clock_ahead_still_goes_with_its_forgotten_question(
    greeted, agent_api, time_machine
):
    """A gateway whose clock is 4 minutes ahead (accepted: FUTURE_TOLERANCE) replies 7
    minutes after the question by our clock: the window is computed from its timestamp
    (11 min), so the reply stays live, naming the forgotten topic."""
    _forget()
    time_machine.move_to(timezone.now() + timedelta(minutes=7))

    sent = _record(
        agent_api,
        "Courage pour ta hernie discale, repose-toi bien.",
        role="assistant",
        timestamp=(timezone.now() + timedelta(minutes=4)).isoformat(),
    )

    assert sent.status_code == 201, sent.content
    assert not Message.objects.filter(content__contains="hernie").exists()


def _extractions_of(question_id: int) -> int:
    return sum(
        question_id in (job.payload or {}).get("message_ids", [])
        for job in Job.objects.filter(kind="extract")
    )


def test_a_reply_in_two_parts_after_the_forget_records_one_extraction_of_its_question(
    greeted, agent_api
):
    _forget()
    assert _record(agent_api, "Courage pour ta hernie.", role="assistant").status_code == 201
    assert _record(agent_api, "Une hernie discale guérit.", role="assistant").status_code == 201

    assert _extractions_of(greeted) == 1, "each part queued an extraction of the same question"
