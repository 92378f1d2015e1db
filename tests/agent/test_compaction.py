"""Compaction: old messages of a long channel become a summary naming its channel."""

from __future__ import annotations

import pytest

import agent.client
from agent.compaction import channel_compact, compaction_job_enqueue, compaction_needed
from agent.loop import handle_message
from agent.models import LlmUsage
from memory.models import Message, Summary
from memory.services.forgetting import topic_forget
from memory.services.indexing import KIND_SUMMARY, index_rows
from memory.services.jobs import job_run
from memory.services.messages import message_save
from memory.services.search import memory_search
from tests.fakes.anthropic import text_message
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COMPACTION_THRESHOLD = 10
    settings.AGENT_COMPACTION_KEEP_LAST = 4
    settings.AGENT_COALESCE_SECONDS = 0
    return fake_anthropic


def _fill(channel: str, count: int) -> list[Message]:
    messages = []
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append(
            message_save(channel=channel, role=role, content=f"Message {i} de {channel}")
        )
    return messages


def test_nothing_happens_under_the_threshold(world):
    _fill("whatsapp", 10)
    assert not compaction_needed(channel="whatsapp")
    assert channel_compact(channel="whatsapp") is None
    assert world.message_requests == []


def test_old_messages_become_a_summary_and_the_last_ones_stay_verbatim(world):
    messages = _fill("whatsapp", 13)
    _fill("mission_control", 13)  # another channel: untouched
    world.script(text_message("Il a parlé de ses messages 0 à 8."))
    assert compaction_needed(channel="whatsapp")

    summary = channel_compact(channel="whatsapp")

    assert summary is not None
    assert summary.channel == "whatsapp"
    assert summary.content.startswith("Résumé du canal whatsapp, du ")
    assert summary.content.endswith("Il a parlé de ses messages 0 à 8.")
    assert summary.message_count == 9
    assert summary.period_start == messages[0].created_at
    assert summary.period_end == messages[8].created_at
    compacted = Message.objects.filter(channel="whatsapp", compacted=True)
    assert sorted(compacted.values_list("id", flat=True)) == [m.id for m in messages[:9]]
    assert not Message.objects.filter(channel="mission_control", compacted=True).exists()
    prompt = world.last.messages[0]["content"]
    assert "Message 0 de whatsapp" in prompt and "Message 8 de whatsapp" in prompt
    assert "Message 9 de whatsapp" not in prompt
    assert "Canal : whatsapp" in prompt
    usage = LlmUsage.objects.get()
    assert (usage.purpose, usage.channel) == ("compaction", "whatsapp")


def test_the_summary_is_indexed_in_knowledge_and_found_by_meaning(world):
    _fill("whatsapp", 13)
    world.script(text_message("Le propriétaire a organisé un pique-nique au bord du lac."))
    summary = channel_compact(channel="whatsapp")

    index_rows(KIND_SUMMARY, [summary.id])

    hits = memory_search(query="pique-nique au lac", mode="semantic", limit=3)
    assert hits[0].kind == "summary"
    assert hits[0].id == str(summary.id)
    assert hits[0].channel == "whatsapp"


def test_compaction_is_not_run_twice_on_the_same_messages(world):
    _fill("whatsapp", 13)
    world.script(text_message("Résumé."))
    assert channel_compact(channel="whatsapp") is not None
    assert channel_compact(channel="whatsapp") is None
    assert Summary.objects.count() == 1


def test_an_empty_summary_compacts_nothing(world):
    _fill("whatsapp", 13)
    world.script(text_message(""))
    assert channel_compact(channel="whatsapp") is None
    assert not Message.objects.filter(compacted=True).exists()


def test_after_compaction_the_loop_sends_the_summary_instead_of_the_old_messages(world):
    _fill("whatsapp", 13)
    world.script(text_message("Il a parlé du vieux sujet."), text_message("D'accord."))
    channel_compact(channel="whatsapp")

    handle_message(channel="whatsapp", text="On reprend ?")

    request = world.last
    assert "Il a parlé du vieux sujet." in request.system
    sent = "\n".join(str(m["content"]) for m in request.messages)
    assert "Message 0 de whatsapp" not in sent
    assert "Message 12 de whatsapp" in sent


def test_a_compaction_cut_short_by_a_forget_writes_nothing_and_runs_again_later(world, monkeypatch):
    """The owner forgot an exchange while the LLM summarised it: nothing is written; once
    the channel is over the threshold again (same oldest message, same step), a new job
    compacts what remains: the attempt cut short did not use up the channel's job."""
    _fill("whatsapp", 4)
    exchange_save("whatsapp", "J'ai une hernie discale", "Repose-toi bien.")
    _fill("whatsapp", 5)  # 11 messages: over the threshold, the first 7 to compact
    job = compaction_job_enqueue(channel="whatsapp")
    summarise = agent.client.llm_message
    forgets = []

    def owner_forgets_meanwhile(**kwargs):
        if kwargs.get("purpose") == "compaction" and not forgets:
            forgets.append(topic_forget(topic="hernie discale", actor="user"))
        return summarise(**kwargs)

    monkeypatch.setattr(agent.client, "llm_message", owner_forgets_meanwhile)
    # The summary, and the forget's judge (not JSON: its word rule decides).
    world.handler = lambda body: text_message("Il a parlé de sa hernie discale.")

    assert job_run(job.id) == "done"

    assert forgets[0].counts["messages"] == 2
    assert not Summary.all_objects.exists()
    assert not Message.all_objects.filter(compacted=True).exists()

    world.handler = lambda body: text_message("Il a parlé de ses messages.")
    exchange_save("whatsapp", "On reprend ?", "Oui.")  # 11 messages again
    again = compaction_job_enqueue(channel="whatsapp")
    assert again is not None and again.id != job.id
    assert job_run(again.id) == "done"
    summary = Summary.objects.get(channel="whatsapp")
    assert summary.message_count == 7 and "hernie" not in summary.content


def test_a_forget_elsewhere_adds_no_second_compaction_while_one_waits(world):
    _fill("whatsapp", 11)
    job = compaction_job_enqueue(channel="whatsapp")
    world.handler = lambda body: text_message("pas du JSON")  # the forget's judge
    exchange_save("telegram", "Le code du portail est 4512", "Noté.")
    topic_forget(topic="code du portail", actor="user")

    message_save(channel="whatsapp", role="user", content="Encore un message")

    assert compaction_job_enqueue(channel="whatsapp") == job


def test_a_room_no_longer_observed_is_never_compacted_as_the_owners_words(world):
    """QA 8b: what the room said while observed (others' words, still the digest's) is
    neither counted toward the threshold nor summarised as « Propriétaire : … »."""
    from memory.services.channels import channel_settings_set

    channel_settings_set(channel="lobby", observed=True)
    room = [
        message_save(channel="lobby", role="user", author="david", content=f"Salon {i}")
        for i in range(3)
    ]
    channel_settings_set(channel="lobby", observed=False)  # the owner uses the channel now
    _fill("lobby", 10)
    assert not compaction_needed(channel="lobby")
    assert compaction_job_enqueue(channel="lobby") is None

    _fill("lobby", 1)
    world.script(text_message("Il a parlé de ses messages."))
    summary = channel_compact(channel="lobby")

    assert summary is not None and summary.message_count == 7
    transcript = world.last.messages[0]["content"]
    assert "Salon" not in transcript and "Message 0 de lobby" in transcript
    assert not Message.objects.filter(pk__in=[m.id for m in room], compacted=True).exists()
