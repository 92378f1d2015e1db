"""A message the owner forgot or erased is not recorded again through POST /messages.

QA: after a topic forget was erased, an outside agent's `POST /messages` carrying the
erased message with its original ``timestamp`` (the field « for imports ») recorded it
again, found by a text search; during the undo window the forgotten message came back
the same way. `memory_import` refuses exactly these rows; the API now does too. A
message without a timestamp is said now: news, recorded as any other.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Message
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import topic_forget
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db

SAID = "Mon opération du genou est confirmée pour le 12 mars."


def _sent_again(question: Message) -> dict:
    return {
        "channel": question.channel,
        "role": "user",
        "content": question.content,
        "timestamp": question.created_at.isoformat(),
    }


@pytest.fixture
def forgotten():
    question, _ = exchange_save("whatsapp", SAID, "Noté, bon courage.")
    sent = _sent_again(question)
    result = topic_forget(topic="opération du genou", actor=Actor.USER)
    assert not Message.objects.filter(content=SAID).exists()
    return sent, result.forgetting_id


def _refused(agent_api, sent):
    answer = agent_api.post("/api/v1/memory/messages", {"messages": [sent]}, format="json")
    assert answer.status_code == 400, answer.content
    assert "n'est pas réenregistré" in answer.json()["message"]
    assert not Message.objects.filter(content=SAID).exists()


def test_a_forgotten_message_sent_again_with_its_date_is_refused(agent_api, forgotten):
    _refused(agent_api, forgotten[0])


def test_an_erased_message_sent_again_with_its_date_is_refused(agent_api, forgotten):
    sent, forgetting_id = forgotten
    forgetting_erase(forgetting_id=forgetting_id, actor=Actor.USER)

    _refused(agent_api, sent)
    single = agent_api.post("/api/v1/memory/messages", sent, format="json")
    assert single.status_code == 400, single.content


def test_the_same_words_said_now_are_news(agent_api, forgotten):
    sent, forgetting_id = forgotten
    forgetting_erase(forgetting_id=forgetting_id, actor=Actor.USER)
    del sent["timestamp"]

    answer = agent_api.post("/api/v1/memory/messages", sent, format="json")

    assert answer.status_code == 201, answer.content
    assert Message.objects.filter(content=SAID).count() == 1


@pytest.mark.parametrize(
    "retyped",
    [
        lambda sent: {**sent, "timestamp": sent["timestamp"][:19] + "+00:00"},
        lambda sent: {**sent, "content": sent["content"].upper().replace("É", "E")},
    ],
    ids=["its-second", "its-text-retyped"],
)
def test_a_forgotten_message_sent_again_as_it_looks_is_refused(agent_api, forgotten, retyped):
    """Review: matched on its exact date and text only, the message came back with its
    date cut to the second, which memory_import recognises."""
    sent, _ = forgotten
    sent = {**sent, "timestamp": _utc(sent["timestamp"])}

    _refused(agent_api, retyped(sent))


def _utc(stamp: str) -> str:
    from datetime import UTC, datetime

    return datetime.fromisoformat(stamp).astimezone(UTC).isoformat()
