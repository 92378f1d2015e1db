"""A forget run by a tool mid-answer reaches the LLM requests that follow in the same answer.

What the forget took leaves the system prompt's memory block and the history before
the next request; what earlier tool calls of the answer returned is withdrawn too (it
may quote what was taken); every tool_use keeps its tool_result (the fake server
answers 400 otherwise, as the real API does).
"""

from __future__ import annotations

import json

import pytest

from agent.loop import handle_message
from agent.models import LlmUsage
from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.formatting import estimate_tokens
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import text_message, tool_use_message
from tests.memory.world import index_everything

pytestmark = pytest.mark.django_db

WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin, la cérémonie à Belém"
DOG = "Le chien de Marie s'appelle Filou"
TOPIC = "le mariage de Marie à Lisbonne"
DETAILS = ("Belém", "14 juin")


def _chats(world) -> list[str]:
    """Each chat request (the ones with tools) as JSON text."""
    return [
        json.dumps(r.json, ensure_ascii=False)
        for r in world.message_requests
        if r.json.get("tools")
    ]


def _leaks(text: str) -> list[str]:
    return [d for d in DETAILS if d in text]


def test_the_history_of_the_next_request_leaves_out_what_the_forget_took(world):
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    past_exchange("whatsapp", DOG, "Joli nom.")
    world.script(
        tool_use_message(("memory__forget", {"topic": TOPIC})),
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),  # the forget's judge
        text_message("C'est oublié."),
    )

    result = handle_message(channel="whatsapp", text="Oublie le mariage de Marie à Lisbonne")

    assert result.reply == "C'est oublié."
    first, after = _chats(world)
    assert _leaks(first), "precondition: the history of turn 1 holds the wedding"
    assert not _leaks(after)
    # What was not taken stays: the dog, and the request being answered.
    assert "Filou" in after
    assert "Oublie le mariage de Marie à Lisbonne" in after


def test_the_block_of_the_next_request_leaves_out_the_forgotten_fact(world):
    fact_store(key="mariage_marie", value=WEDDING)
    fact_store(key="chien_marie", value=DOG)
    index_everything()
    fact = Fact.objects.get(key="mariage_marie")
    world.script(
        tool_use_message(("memory__forget", {"topic": TOPIC})),
        text_message(json.dumps({"ids": [f"fact:{fact.id}"]})),
        text_message("C'est oublié."),
    )

    handle_message(channel="mission_control", text="Oublie le mariage de Marie à Lisbonne")

    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert _leaks(first.system), "precondition: turn 1's block holds the fact"
    assert not _leaks(after.system)
    assert not _leaks(json.dumps(after.messages, ensure_ascii=False))  # nor the delete's result
    # The usage of each call counts the block it was sent.
    block = after.system[after.system.index("<<<MEMOIRE") :]
    usages = LlmUsage.objects.filter(purpose="chat").order_by("id")
    assert usages[1].retrieval_tokens == estimate_tokens(block.strip())
    assert usages[1].retrieval_tokens < usages[0].retrieval_tokens


def test_what_a_search_returned_before_the_forget_is_withdrawn(world):
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    world.script(
        tool_use_message(("memory__search", {"query": "mariage de Marie"}), text="Je cherche."),
        tool_use_message(("memory__forget", {"topic": TOPIC})),
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),
        text_message("C'est oublié."),
    )

    result = handle_message(channel="mission_control", text="Oublie le mariage de Marie")

    assert [o.name for o in result.tool_calls] == ["memory__search", "memory__forget"]
    assert result.reply == "C'est oublié."
    _, searched, after = _chats(world)
    assert _leaks(searched), "precondition: the search returned the wedding"
    assert not _leaks(after)
    # Each tool_use still has its tool_result, the forget's own result untouched.
    last = world.message_requests[-1]
    uses = [b for m in last.messages if isinstance(m["content"], list) for b in m["content"]]
    use_ids = [b["id"] for b in uses if b["type"] == "tool_use"]
    results = {b["tool_use_id"]: b for b in uses if b["type"] == "tool_result"}
    assert use_ids and set(use_ids) == set(results)
    assert '"forgetting_id"' in results[use_ids[1]]["content"] or "oubli" in json.dumps(
        results[use_ids[1]], ensure_ascii=False
    )


def test_a_fact_deleted_by_its_key_leaves_the_next_block(world):
    fact_store(key="mariage_marie", value=WEDDING)
    index_everything()
    world.script(
        tool_use_message(("memory__delete_fact", {"key": "mariage_marie"})),
        text_message("C'est supprimé."),
    )

    handle_message(channel="mission_control", text="Supprime le fait sur le mariage de Marie")

    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert _leaks(first.system), "precondition: turn 1's block holds the fact"
    assert not _leaks(after.system)
    assert not _leaks(json.dumps(after.messages, ensure_ascii=False))  # nor the delete's result


def test_a_dry_run_forgets_nothing_and_changes_no_request(world):
    fact_store(key="mariage_marie", value=WEDDING)
    index_everything()
    world.script(
        tool_use_message(("memory__forget", {"topic": TOPIC, "dry_run": True})),
        text_message(json.dumps({"ids": []})),
        text_message("Voici ce qui serait oublié."),
    )

    handle_message(channel="mission_control", text="Qu'oublierais-tu sur le mariage de Marie ?")

    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert after.system == first.system


def test_a_goal_the_agent_deletes_leaves_the_next_block(world):
    from memory.models import FactKind
    from memory.services.self_memory import agent_item_store

    goal = agent_item_store(
        kind=FactKind.GOAL,
        category="capability_request",
        content="J'aimerais pouvoir lire les notes Obsidian",
    ).item
    world.script(
        tool_use_message(("memory__delete_goal", {"id": goal.id, "reason": "atteint"})),
        text_message("C'est fait."),
    )

    handle_message(channel="mission_control", text="Tu sais lire les notes maintenant !")

    first, after = (r for r in world.message_requests if r.json.get("tools"))
    assert "lire les notes Obsidian" in first.system, "precondition: turn 1's block holds it"
    assert "lire les notes Obsidian" not in after.system
    assert "lire les notes Obsidian" not in json.dumps(after.messages, ensure_ascii=False)


def test_a_dry_runs_preview_is_withdrawn_after_the_forget_it_previewed(world):
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    judge = text_message(json.dumps({"ids": [f"message:{wedding.id}"]}))
    world.script(
        tool_use_message(("memory__forget", {"topic": TOPIC, "dry_run": True})),
        judge,
        tool_use_message(("memory__forget", {"topic": TOPIC})),
        judge,
        text_message("C'est oublié."),
    )

    handle_message(channel="mission_control", text="Oublie le mariage de Marie à Lisbonne")

    chats = [r for r in world.message_requests if r.json.get("tools")]
    after = json.dumps(chats[-1].messages, ensure_ascii=False)
    assert "Belém" not in after, after
