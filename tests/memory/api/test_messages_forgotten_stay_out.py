"""A message the owner forgot or erased is not recorded again through POST /messages.

QA: after a topic forget was erased, an outside agent's `POST /messages` carrying the
erased message with its original ``timestamp`` (the field « for imports ») recorded it
again, found by a text search; during the undo window the forgotten message came back
the same way. `memory_import` refuses exactly these rows; the API now does too. A
message without a timestamp is said now: news, recorded as any other. The author it
names does not count: a gateway re-sending its history with the sender's name is
sending the same message (QA: ``"author": "Mickael"`` brought it back).
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Message
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import topic_forget
from memory.services.messages import message_save

pytestmark = pytest.mark.django_db

SAID = "Mon opération du genou est confirmée pour le 12 mars."


def _sent_again(question: Message) -> dict:
    return {
        "channel": question.channel,
        "role": "user",
        "content": question.content,
        "timestamp": question.created_at.isoformat(),
    }


def _said_then_forgotten(author: str = "") -> tuple[dict, int]:
    """The message as it is sent again, and the forget that took its exchange."""
    question = message_save(channel="whatsapp", role="user", content=SAID, author=author)
    message_save(
        channel="whatsapp", role="assistant", content="Noté, bon courage.", reply_to_id=question.id
    )
    sent = _sent_again(question)
    result = topic_forget(topic="opération du genou", actor=Actor.USER)
    assert not Message.objects.filter(content=SAID).exists()
    return sent, result.forgetting_id


@pytest.fixture
def forgotten():
    return _said_then_forgotten()


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
    ("recorded_by", "sent_by"),
    [("", "Mickael"), ("Mickael", ""), ("Mickael", "Mika")],
    ids=["author-added", "author-dropped", "author-changed"],
)
@pytest.mark.parametrize("erased", [False, True], ids=["forgotten", "erased"])
def test_a_message_sent_again_naming_another_author_is_refused(
    agent_api, recorded_by, sent_by, erased
):
    sent, forgetting_id = _said_then_forgotten(author=recorded_by)
    if erased:
        forgetting_erase(forgetting_id=forgetting_id, actor=Actor.USER)

    _refused(agent_api, {**sent, "author": sent_by})
    found = agent_api.get("/api/v1/memory/search", {"q": "genou", "mode": "text"}).json()
    assert found["count"] == 0, found


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
