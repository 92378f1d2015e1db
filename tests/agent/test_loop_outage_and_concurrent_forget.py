"""The agent loop keeps two promises when the world moves under it.

- A store that is down delays work, never loses it: a user message left unanswered
  because Anthropic was down is extracted with the channel's next exchange, as the
  messages API does for an outside agent (the user messages since the last reply).
- Forgotten content reaches the LLM by no path: an owner forget or erasure committed
  (from /memory, the API or MCP) while an answer runs several LLM calls leaves the
  answer's next request: its memory block, its history and the earlier tool results.
"""

from __future__ import annotations

import json

import pytest

import agent.client
from agent.client import LlmUnavailable
from agent.context import WITHDRAWN_RESULT
from agent.loop import handle_message
from memory.models import Actor, Fact, Job, Message
from memory.services.erasing import fact_erase
from memory.services.facts import fact_store
from memory.services.forgetting import topic_forget
from tests.fakes.anthropic import overloaded, text_message, tool_use_message
from tests.memory.world import index_everything

pytestmark = pytest.mark.django_db

WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin, la cérémonie à Belém"
DETAILS = ("Belém", "14 juin")


def _leaks(text: str) -> list[str]:
    return [d for d in DETAILS if d in text]


# --- An outage delays the extraction, never loses it -------------------------------------


def test_a_message_left_unanswered_by_an_llm_outage_is_extracted_with_the_next_exchange(
    world, settings
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    world.script(overloaded(retry_after_ms=10))
    with pytest.raises(LlmUnavailable):
        handle_message(channel="whatsapp", text="Je pars à Lisbonne du 3 au 17 août.")
    first = Message.objects.get(content__contains="Lisbonne")
    assert not Job.objects.filter(kind="extract").exists()

    world.script(text_message("Oui, je suis là."))
    result = handle_message(channel="whatsapp", text="Tu es là ?")

    [job] = Job.objects.filter(kind="extract")
    assert job.payload["message_ids"] == [first.id, *result.message_ids]
    assert job.payload["reply_id"] == result.reply_id


def test_an_answered_exchange_is_not_extracted_again(world):
    world.script(text_message("Noté."), text_message("Bonne route."))
    first = handle_message(channel="whatsapp", text="Je pars à Lisbonne du 3 au 17 août.")
    second = handle_message(channel="whatsapp", text="Je prends le train de nuit.")

    jobs = list(Job.objects.filter(kind="extract").order_by("id"))
    assert [j.payload["message_ids"] for j in jobs] == [first.message_ids, second.message_ids]


def test_the_outage_of_another_channel_stays_with_that_channel(world, settings):
    settings.ANTHROPIC_MAX_RETRIES = 0
    world.script(overloaded(retry_after_ms=10))
    with pytest.raises(LlmUnavailable):
        handle_message(channel="telegram", text="Je pars à Lisbonne du 3 au 17 août.")

    world.script(text_message("Oui, je suis là."))
    result = handle_message(channel="whatsapp", text="Tu es là ?")

    [job] = Job.objects.filter(kind="extract")
    assert job.payload["message_ids"] == result.message_ids


# --- A forget committed elsewhere while the answer runs ----------------------------------


def _after_the_first_chat_call(monkeypatch, action):
    """Run ``action`` once, right after the answer's first chat call came back."""
    llm_call = agent.client.llm_call
    done = []

    def wrapped(**kwargs):
        answer = llm_call(**kwargs)
        if kwargs.get("purpose") == "chat" and not done:
            done.append(action())
        return answer

    monkeypatch.setattr(agent.client, "llm_call", wrapped)
    return done


def test_an_owner_forget_made_while_the_answer_runs_leaves_its_next_request(world, monkeypatch):
    fact, _ = fact_store(key="mariage_marie", value=WEDDING)
    index_everything()
    done = _after_the_first_chat_call(
        monkeypatch,
        lambda: topic_forget(topic="le mariage de Marie à Lisbonne", actor=Actor.USER),
    )
    world.script(
        tool_use_message(("memory__search", {"query": "mariage de Marie"})),
        text_message(json.dumps({"ids": [f"fact:{fact.id}"]})),  # the forget's judge
        text_message("Voilà."),
    )

    handle_message(channel="mission_control", text="Parle-moi du mariage de Marie")

    assert done and done[0].forgetting_id
    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert _leaks(first.system), "precondition: turn 1's block holds the fact"
    assert not _leaks(after.system)
    # What the search returned before the forget is withdrawn, its pairing kept.
    assert not _leaks(json.dumps(after.messages, ensure_ascii=False))
    uses = [b for m in after.messages if isinstance(m["content"], list) for b in m["content"]]
    results = [b for b in uses if b["type"] == "tool_result"]
    assert [r["content"] for r in results] == [WITHDRAWN_RESULT]
    assert {b["id"] for b in uses if b["type"] == "tool_use"} == {r["tool_use_id"] for r in results}


def test_an_owner_erasure_made_while_the_answer_runs_leaves_its_next_request(world, monkeypatch):
    fact, _ = fact_store(key="mariage_marie", value=WEDDING)
    index_everything()
    done = _after_the_first_chat_call(
        monkeypatch, lambda: fact_erase(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER)
    )
    world.script(
        tool_use_message(("memory__recent", {"limit": 1})),
        text_message("Voilà."),
    )

    handle_message(channel="mission_control", text="Parle-moi du mariage de Marie")

    assert done
    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert _leaks(first.system), "precondition: turn 1's block holds the fact"
    assert not _leaks(after.system)
    assert not _leaks(json.dumps(after.messages, ensure_ascii=False))


def test_without_a_forget_the_next_request_keeps_the_block_and_the_tool_results(world):
    fact_store(key="mariage_marie", value=WEDDING)
    index_everything()
    world.script(
        tool_use_message(("memory__search", {"query": "mariage de Marie"})),
        text_message("Voilà."),
    )

    handle_message(channel="mission_control", text="Parle-moi du mariage de Marie")

    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert _leaks(first.system) and _leaks(after.system)
    assert WITHDRAWN_RESULT not in json.dumps(after.messages, ensure_ascii=False)
