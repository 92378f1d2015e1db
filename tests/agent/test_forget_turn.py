"""A turn that forgets, through the real loop and the fake Messages API.

The request to forget and the reply name the topic: they never feed memory
(search, auto-retrieval, the history, extraction), and the tool result the LLM
reads names nothing that was forgotten. A dry run changes nothing but its
exchange is kept out of memory all the same.
"""

from __future__ import annotations

import json

import pytest

from agent.loop import handle_message
from memory.models import MemoryRetrieval, Message
from memory.services.indexing import KIND_MESSAGE, index_rows
from memory.services.search import memory_search
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import text_message, tool_use_message

pytestmark = pytest.mark.django_db

WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin, la cérémonie à Belém"
DOG = "Le chien de Marie s'appelle Filou"
TOPIC = "le mariage de Marie à Lisbonne"
# The request and an LLM reply that (against its instructions) repeats the topic.
REQUEST = "Oublie le mariage de Marie à Lisbonne, la cérémonie à Belém"
REPLY = "C'est oublié : plus rien sur la cérémonie à Belém."
# Words that only the forgotten exchange, the request and the reply contain.
FORGOTTEN_WORDS = ("Belém", "mariage", "Lisbonne", "14 juin")


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    dog = past_exchange("whatsapp", DOG, "Joli nom.")
    return fake_anthropic, wedding, dog


def _forget_turn(world, tool_input, capture):
    fake, wedding, _ = world
    fake.script(
        tool_use_message(("memory__forget", tool_input)),
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),  # the forget's judgement
        text_message(REPLY),
    )
    with capture(execute=True):
        result = handle_message(channel="mission_control", text=REQUEST)
    # A late indexing task for the request and the reply changes nothing.
    index_rows(KIND_MESSAGE, [*result.message_ids, result.reply_id], force=True)
    return result


def _leaks(text: str, words=FORGOTTEN_WORDS) -> list[str]:
    return [word for word in words if word.lower() in text.lower()]


def _assert_the_exchange_never_feeds_memory(world, result, capture, *, words=FORGOTTEN_WORDS):
    """``words``: what no read path may show afterwards."""
    fake, _, dog = world
    exchange = {f"message:{i}" for i in (*result.message_ids, result.reply_id)}
    for mode in ("text", "semantic", "hybrid"):
        for query in ("cérémonie à Belém", "oublie le mariage de Marie"):
            hits = memory_search(query=query, mode=mode)
            found = {f"message:{h.id}" for h in hits if h.kind in ("message", "exchange")}
            assert not exchange & found, (mode, query, hits)
            assert not _leaks(" ".join(h.excerpt for h in hits), words), (mode, query, hits)
    asked = Message.all_objects.get(pk=result.message_ids[0])
    reply = Message.all_objects.get(pk=result.reply_id)
    assert asked.memory_excluded and reply.memory_excluded
    assert not Message.objects.filter(pk__in=[asked.pk, reply.pk]).exists()
    # No extraction: no job, no LLM call beyond the chat and the forget's judgement.
    from memory.models import Job

    assert not Job.objects.filter(kind="extract").exists()
    assert [r.json.get("tools") is not None for r in fake.message_requests] == [True, False, True]
    # The retrieval log of the turn keeps no trace of the request.
    assert not _leaks(MemoryRetrieval.objects.get(pk=result.retrieval_id).message_preview, words)

    # The next turn: neither its auto-retrieval nor its history bring the topic back.
    fake.script(text_message("Son chien s'appelle Filou."))
    with capture(execute=True):
        after = handle_message(channel="mission_control", text="Que sais-tu de Marie ?")
    body = fake.last.system + json.dumps(fake.last.messages, ensure_ascii=False)
    assert not _leaks(body, words), body
    assert not exchange & {m["id"] for m in after.retrieval.memories}
    assert not Job.objects.filter(kind="extract", key=f"extract:{result.reply_id}").exists()


def test_a_forget_asked_in_chat_takes_the_topic_and_leaves_no_trace_of_the_request(
    world, django_capture_on_commit_callbacks
):
    fake, wedding, dog = world
    result = _forget_turn(world, {"topic": TOPIC}, django_capture_on_commit_callbacks)

    assert result.reply == REPLY
    assert not Message.objects.filter(pk=wedding.pk).exists()
    assert Message.objects.filter(pk=dog.pk).exists()
    # What the LLM read back: counts and the undo window, nothing that was forgotten.
    [tool_result] = fake.last.tool_results()
    assert "oublié" in tool_result["content"] and "annuler" in tool_result["content"]
    assert not _leaks(tool_result["content"]) and "Marie" not in tool_result["content"]
    _assert_the_exchange_never_feeds_memory(world, result, django_capture_on_commit_callbacks)


def test_a_dry_run_in_chat_shows_what_it_would_take_changes_nothing_and_is_kept_out(
    world, django_capture_on_commit_callbacks
):
    from memory.models import Forgetting

    fake, wedding, dog = world
    result = _forget_turn(
        world, {"topic": TOPIC, "dry_run": True}, django_capture_on_commit_callbacks
    )

    # The dry run lists what it would take, for the owner to confirm; nothing changed.
    [tool_result] = fake.last.tool_results()
    assert "14 juin" in tool_result["content"] and "Filou" not in tool_result["content"]
    assert not Forgetting.objects.exists()
    assert Message.objects.filter(pk__in=[wedding.pk, dog.pk]).count() == 2
    # The wedding stays in memory; the request and the reply do not.
    _assert_the_exchange_never_feeds_memory(
        world,
        result,
        django_capture_on_commit_callbacks,
        words=("Oublie le mariage", "plus rien sur"),
    )
