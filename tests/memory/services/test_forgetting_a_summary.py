"""A forget that takes a compaction summary leaves the history the rest of what it stood for.

A compaction marks the messages it summarised « compacted »: out of the history the LLM
receives, the summary standing for them. Before, a topic forget that took the summary left
its other messages, never forgotten, out of the history with nothing standing for them (QA
5): the cellar key, the physio and the gate code went with the trip, for good after the
purge. They come back to the history (the next compaction summarises them again, without
the topic); the undo gives the summary back and compacts them again.
"""

from __future__ import annotations

import json

import pytest

from agent.compaction import channel_compact
from memory.models import Actor, Message
from memory.selectors import channel_history, channel_summary_latest
from memory.services.forgetting import forgetting_restore, topic_forget
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db

SUMMARY = (
    "Le propriétaire a réservé un voyage à Zanzibar pour mars. La clé de la cave est chez "
    "Mme Duval, la gardienne. Kiné jeudi à 18 h. Code du portail : 4821B."
)


def _context() -> str:
    """What the LLM receives of the channel: its history and its latest summary."""
    history = "\n".join(m.content for m in channel_history(channel="whatsapp"))
    latest = channel_summary_latest(channel="whatsapp")
    return history + "\n" + (latest.content if latest else "")


def _compacted_trip(fake_anthropic, settings):  # noqa: F811
    settings.AGENT_COMPACTION_THRESHOLD = 6
    settings.AGENT_COMPACTION_KEEP_LAST = 0
    trip, _ = exchange_save("whatsapp", "Le voyage à Zanzibar est réservé pour mars", "Génial !")
    exchange_save("whatsapp", "Ma clé de la cave est chez la gardienne, Mme Duval", "Noté.")
    exchange_save("whatsapp", "Le rendez-vous chez le kiné est jeudi à 18 h", "Noté.")
    exchange_save("whatsapp", "Le code du portail est 4821B", "Noté.")
    fake_anthropic.script(text_message(SUMMARY))
    summary = channel_compact(channel="whatsapp")
    assert summary is not None and summary.message_count == 8
    assert "Duval" in _context() and not channel_history(channel="whatsapp")
    # The owner forgets the trip; the judge finds it in the exchange and the summary.
    fake_anthropic.script(
        text_message(json.dumps({"ids": [f"message:{trip.id}", f"summary:{summary.id}"]}))
    )
    return topic_forget(topic="le voyage à Zanzibar", actor=Actor.USER)


def test_the_messages_a_forgotten_summary_stood_for_come_back_to_the_history(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
):
    _compacted_trip(fake_anthropic, settings)

    context = _context()
    assert "Zanzibar" not in context
    assert "Duval" in context and "4821B" in context and "kiné" in context
    assert Message.objects.filter(compacted=True).count() == 0


def test_the_undo_gives_the_summary_back_and_compacts_its_messages_again(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
):
    result = _compacted_trip(fake_anthropic, settings)

    forgetting_restore(forgetting_id=result.forgetting_id, actor=Actor.USER)

    assert channel_summary_latest(channel="whatsapp").content.endswith(SUMMARY)
    assert not channel_history(channel="whatsapp")
    assert Message.objects.filter(compacted=False).count() == 0


def test_the_messages_of_an_earlier_summary_stay_compacted(
    vector_store,
    local_embedder,
    fake_anthropic,  # noqa: F811
    settings,
):
    settings.AGENT_COMPACTION_THRESHOLD = 2
    settings.AGENT_COMPACTION_KEEP_LAST = 0
    exchange_save("whatsapp", "Le code du portail est 4821B", "Noté.")
    exchange_save("whatsapp", "Le rendez-vous chez le kiné est jeudi à 18 h", "Noté.")
    fake_anthropic.script(text_message("Code du portail 4821B ; kiné jeudi à 18 h."))
    first = channel_compact(channel="whatsapp")
    trip, _ = exchange_save("whatsapp", "Le voyage à Zanzibar est réservé pour mars", "Génial !")
    exchange_save("whatsapp", "Ma clé de la cave est chez Mme Duval", "Noté.")
    fake_anthropic.script(
        text_message("Voyage à Zanzibar en mars ; clé de la cave chez Mme Duval.")
    )
    second = channel_compact(channel="whatsapp")
    assert first is not None and second is not None
    fake_anthropic.script(
        text_message(json.dumps({"ids": [f"message:{trip.id}", f"summary:{second.id}"]}))
    )

    topic_forget(topic="le voyage à Zanzibar", actor=Actor.USER)

    history = [m.content for m in channel_history(channel="whatsapp")]
    assert any("Duval" in text for text in history), history
    assert not any("4821B" in text for text in history), history
    assert Message.objects.filter(content__contains="4821B", compacted=True).exists()
