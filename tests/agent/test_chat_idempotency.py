"""POST /api/agent/chat (and /chat/stream) with an idempotency key: a retry stores nothing
twice and pays nothing twice; what the owner forgot since is never given back.

QA 8a: a client retrying after a lost answer stored its message twice and paid the LLM
twice (the messages and context APIs had a key, the chat had none).
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from agent import chat_replay
from memory.models import Actor, Message, MessageRecording, MessageRole
from memory.services.forgetting import topic_forget
from tests.fakes.anthropic import overloaded, text_message

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/agent/chat"
STREAM_URL = "/api/agent/chat/stream"


@pytest.fixture
def world(vector_store, local_embedder, settings, fake_anthropic):
    settings.AGENT_COALESCE_SECONDS = 0
    return fake_anthropic


def _post(client, body, path=URL):
    return client.post(path, json.dumps(body), content_type="application/json")


def _users(channel="whatsapp"):
    return list(Message.all_objects.filter(channel=channel, role=MessageRole.USER))


def _replies(channel="whatsapp"):
    return list(Message.all_objects.filter(channel=channel, role=MessageRole.ASSISTANT))


ASK = {"channel": "whatsapp", "message": "Quel est le code du portail ?", "idempotency_key": "k-1"}


def test_a_retry_after_an_answer_gives_the_same_answer_and_stores_and_pays_nothing(
    world, staff_client
):
    world.script(text_message("Le code est 4821.", input_tokens=400, output_tokens=12))

    first = _post(staff_client, ASK)
    again = _post(staff_client, ASK)

    assert first.status_code == 200, first.content
    assert again.status_code == 200, again.content
    one, two = first.json(), again.json()
    assert len(world.message_requests) == 1  # paid once
    assert len(_users()) == 1 and len(_replies()) == 1  # stored once
    assert one["replayed"] is False and two["replayed"] is True
    for name in ("reply", "channel", "message_ids", "reply_id", "usage", "coalesced"):
        assert two[name] == one[name], name
    assert two["reply"] == "Le code est 4821."
    assert two["retrieval"]["id"] == one["retrieval"]["id"]


def test_a_retry_after_an_outage_answers_the_saved_message_without_saving_it_again(
    world, staff_client, settings
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    world.script(overloaded(), text_message("Le code est 4821."))

    failed = _post(staff_client, ASK)
    assert failed.status_code == 503
    [saved] = _users()
    assert failed.json()["extra"]["message_ids"] == [saved.id]

    answered = _post(staff_client, ASK)

    assert answered.status_code == 200, answered.content
    body = answered.json()
    assert body["reply"] == "Le code est 4821."
    assert body["message_ids"] == [saved.id] and body["replayed"] is False
    assert _users() == [saved]  # the retry saved nothing more
    [reply] = _replies()
    assert reply.reply_to_id == saved.id and body["reply_id"] == reply.id
    # And once answered, a third try is a replay.
    assert _post(staff_client, ASK).json()["replayed"] is True
    assert len(world.message_requests) == 2


def test_the_same_key_with_another_message_is_refused_in_french(world, staff_client):
    world.script(text_message("Le code est 4821."))
    assert _post(staff_client, ASK).status_code == 200

    other = _post(staff_client, {**ASK, "message": "Et celui du garage ?"})

    assert other.status_code == 409
    assert "clé d'idempotence a déjà servi" in other.json()["message"]
    assert len(_users()) == 1 and len(world.message_requests) == 1


def test_keys_are_the_chats_own_and_each_accounts_own(world, staff_client, client, settings):
    """A key used on the messages API, or by another account, is another key."""
    from django.contrib.auth import get_user_model

    world.script(text_message("Un."), text_message("Deux."), text_message("Trois."))
    assert (
        staff_client.post(
            "/api/memory/messages",
            {"channel": "whatsapp", "content": "Bonjour", "idempotency_key": "k-1"},
            content_type="application/json",
        ).status_code
        == 201
    )
    assert _post(staff_client, ASK).json()["replayed"] is False
    other = get_user_model().objects.create_user("autre", password="x" * 20, is_staff=True)
    client.force_login(other)
    assert _post(client, ASK).json()["replayed"] is False
    assert len(world.message_requests) == 2


def test_a_reply_forgotten_since_is_not_given_back(world, staff_client):
    world.script(text_message("Le code du portail est 4821."))
    first = _post(staff_client, ASK).json()
    ids = [f"message:{first['message_ids'][0]}", f"message:{first['reply_id']}"]
    topic_forget(topic="portail", actor=Actor.USER, only=ids)
    assert _replies() and Message.objects.filter(pk=first["reply_id"]).count() == 0
    paid = len(world.message_requests)  # the chat's call, the forget's judge

    again = _post(staff_client, ASK)

    assert again.status_code == 410, again.content
    assert "oublié" in again.json()["message"]
    assert "4821" not in again.content.decode()
    assert len(world.message_requests) == paid


def test_a_question_forgotten_before_its_answer_is_not_answered_on_retry(
    world, staff_client, settings
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    world.script(overloaded())
    assert _post(staff_client, ASK).status_code == 503
    [saved] = _users()
    topic_forget(topic="portail", actor=Actor.USER, only=[f"message:{saved.id}"])
    paid = len(world.message_requests)

    again = _post(staff_client, ASK)

    assert again.status_code == 410, again.content
    assert "oublié" in again.json()["message"]
    assert len(world.message_requests) == paid and _replies() == []


def test_a_retry_while_the_first_still_answers_is_told_to_wait(world, staff_client):
    """Two sends at once: the second stores nothing and pays nothing (409, in French)."""
    key = chat_replay.chat_key(f"{staff_client_user_pk()}:k-1")
    with chat_replay.chat_answering(key):
        busy = _post(staff_client, ASK)

    assert busy.status_code == 409
    assert "encore en cours" in busy.json()["message"]
    assert _users() == [] and len(world.message_requests) == 0


def test_two_sends_at_once_make_one_message_and_one_call(world, staff_client, settings):
    """The real race: the first request holds the LLM (its reply comes after the second
    request arrived); the second is refused, then its retry is a replay."""
    from dataclasses import replace

    world.script(replace(text_message("Le code est 4821."), delay_s=2.0))
    results = {}

    def send():
        results["first"] = _post(staff_client, ASK)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        _wait_for(lambda: len(world.message_requests) == 1)
        results["second"] = _post(staff_client, ASK)
    finally:
        sender.join(30)

    assert results["first"].status_code == 200, results["first"].content
    assert results["second"].status_code == 409
    assert len(_users()) == 1 and len(world.message_requests) == 1
    assert _post(staff_client, ASK).json()["replayed"] is True


def test_the_stream_replays_too(world, staff_client):
    world.script(text_message("Le code est 4821."))
    assert _post(staff_client, ASK).status_code == 200

    response = staff_client.post(
        STREAM_URL,
        json.dumps(ASK),
        content_type="application/json",
        HTTP_ACCEPT="text/event-stream",
    )

    text = b"".join(response.streaming_content).decode()
    assert "event: saved" in text and "event: done" in text
    done = json.loads(text.split("event: done\ndata: ")[1].split("\n")[0])
    assert done["reply"] == "Le code est 4821." and done["replayed"] is True
    assert len(world.message_requests) == 1 and len(_users()) == 1


def test_the_recording_holds_ids_and_numbers_never_words(world, staff_client):
    world.script(text_message("Le code est 4821."))
    _post(staff_client, ASK)

    [recording] = MessageRecording.objects.all()
    stored = json.dumps([recording.key, recording.message_ids, recording.answer])
    assert "4821" not in stored and "portail" not in stored


def staff_client_user_pk():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username="owner").pk


def _wait_for(condition, timeout=20.0):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_a_request_to_forget_sent_again_gives_nothing_of_the_topic_back(
    world, staff_client, settings
):
    """QA 9a: the owner erased the forget; the retry gave its reply back word for word,
    « la cérémonie à Belém »: a request to forget and its reply are never replayed."""
    from memory.models import Forgetting
    from memory.services.erasing import forgetting_erase
    from tests.agent.exchanges import past_exchange
    from tests.fakes.anthropic import tool_use_message

    wedding = past_exchange("whatsapp", "Le mariage de Marie est à Belém", "Noté !")
    world.script(
        tool_use_message(("memory__forget", {"topic": "le mariage de Marie"})),
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),
        text_message("C'est oublié : plus rien sur la cérémonie à Belém."),
    )
    ask = {"channel": "mission_control", "message": "Oublie le mariage de Marie à Belém"}
    ask["idempotency_key"] = "k-forget"
    assert _post(staff_client, ask).status_code == 200
    forgetting_erase(forgetting_id=Forgetting.objects.get().pk, actor="user")

    again = _post(staff_client, ask)

    assert again.status_code == 410, again.content
    assert "Belém" not in again.content.decode() and "Marie" not in again.content.decode()
    assert len(world.message_requests) == 3
