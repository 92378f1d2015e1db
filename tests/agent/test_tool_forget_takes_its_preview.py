"""The agent's forget the owner agreed to takes nothing its dry run did not show.

The defect: the dry run showed what a forget would take, the owner agreed, and the
forget that followed selected again (a new LLM judgement) and took an exchange the
preview never showed. The dry run now hands out its ids (the agent's scope) and the
confirmation sends them back (``only``), as the MCP tool and the API do (README: "a
confirmation takes nothing its preview did not show").
"""

from __future__ import annotations

import json

import pytest

from agent.loop import handle_message
from agent.tools import TOOLS
from memory.models import Message
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import text_message, tool_use_message

pytestmark = pytest.mark.django_db

TOPIC = "le voyage de Marie à Lisbonne"


def _previewed(world):
    """Two exchanges on the trip; the dry run's judge shows one of them. Returns both and
    the preview the tool gave."""
    trip = past_exchange("whatsapp", "Le voyage de Marie à Lisbonne est en juin", "Noté.")
    work = past_exchange(
        "whatsapp", "Marie m'a parlé de son voyage à Lisbonne pour le travail de Paul", "Ok."
    )
    world.script(
        tool_use_message(("memory__forget", {"topic": TOPIC, "dry_run": True})),
        text_message(json.dumps({"ids": [f"message:{trip.id}"]})),  # the preview's judge
        text_message("Je retirerais 1 échange sur ce voyage. Je confirme ?"),
    )
    first = handle_message(channel="mission_control", text="Oublie le voyage de Marie à Lisbonne")
    assert first.tool_calls[0].data["counts"]["exchanges"] == 1
    assert str(work.content[:20]) not in first.tool_calls[0].content  # not shown
    return trip, work, first.tool_calls[0].data


def _agreed(world, tool_input: dict, trip, work):
    world.script(
        tool_use_message(("memory__forget", tool_input)),
        # The judge of the forget, asked again, now says more.
        text_message(json.dumps({"ids": [f"message:{trip.id}", f"message:{work.id}"]})),
        text_message("C'est oublié."),
    )
    return handle_message(channel="mission_control", text="Oui, vas-y")


def test_the_forget_the_owner_agreed_to_takes_nothing_its_dry_run_did_not_show(world):
    trip, work, preview = _previewed(world)
    assert f"message:{work.id}" not in preview["ids"]

    second = _agreed(world, {"topic": TOPIC, "ids": preview["ids"]}, trip, work)

    assert not second.tool_calls[0].is_error, second.tool_calls[0].content
    assert second.tool_calls[0].data["counts"]["exchanges"] == 1
    assert not Message.objects.filter(pk=trip.id).exists()  # what was shown is taken
    assert Message.objects.filter(pk=work.id).exists(), "taken without being shown"


def test_the_forget_tool_asks_for_the_ids_of_the_preview_it_showed():
    forget = TOOLS["memory__forget"]
    ids = forget.input_schema["properties"]["ids"]
    assert ids["type"] == "array" and ids["items"]["type"] == "string"
    assert "ids" not in forget.input_schema["required"]  # a clear request forgets directly
    assert "ids de cet aperçu" in forget.description


def test_an_agreement_given_without_the_ids_takes_what_the_dry_run_showed(world):
    """The forget turn is left out of the next turn's history, so the agent, told "oui,
    vas-y", confirms with the topic alone: the channel's last dry run of that topic (its
    words, rephrased or not) stands for the agreement."""
    trip, work, _ = _previewed(world)

    _agreed(world, {"topic": "voyage de Marie à Lisbonne"}, trip, work)

    assert not Message.objects.filter(pk=trip.id).exists()  # what was shown is taken
    assert Message.objects.filter(pk=work.id).exists(), "taken without being shown"


def test_the_same_agreement_delivered_twice_takes_nothing_the_dry_run_did_not_show(world):
    """A chat POST retried after its answer was lost, or the model calling the tool twice
    for one « oui »: the dry run was used up by the first, and the second became a new
    selection that took an exchange the owner was never shown (QA 8a)."""
    trip, work, _ = _previewed(world)
    _agreed(world, {"topic": TOPIC}, trip, work)
    assert not Message.objects.filter(pk=trip.id).exists()

    again = _agreed(world, {"topic": TOPIC}, trip, work)

    assert Message.objects.filter(pk=work.id).exists(), "taken without being shown"
    assert again.tool_calls[0].data["counts"]["exchanges"] == 0


def _restart() -> None:
    """What a restart of the process loses: anything the tools keep in memory."""
    import agent.tools

    previews = getattr(agent.tools, "_previews", None)
    if previews is not None:
        previews.clear()


def test_an_agreement_given_after_a_restart_still_takes_only_what_the_dry_run_showed(world):
    """`serve` restarted (a deploy, a crash) between the dry run and the owner's "oui": the
    dry run kept in the process was lost, and the agreement became a new selection (the
    judge asked again) that took an exchange the owner was never shown. The dry run's
    ids are kept in SQLite."""
    trip, work, _ = _previewed(world)
    _restart()

    _agreed(world, {"topic": "voyage de Marie à Lisbonne"}, trip, work)

    assert not Message.objects.filter(pk=trip.id).exists()  # what was shown is taken
    assert Message.objects.filter(pk=work.id).exists(), "taken without being shown"
