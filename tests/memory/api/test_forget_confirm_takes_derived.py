"""What is drawn, between a forget's preview and its confirmation, from the very messages
the confirmation takes goes with them: a compaction's summary covering them, a digest fact
stated from them (audit 11)."""

from __future__ import annotations

import json

import pytest

from agent.compaction import channel_compact
from agent.loop import handle_message
from memory.models import Fact, Message, Summary
from memory.selectors import channel_summary_latest
from memory.services.channels import channel_settings_set
from memory.services.forgetting import topic_forget, topic_forget_preview
from memory.services.messages import message_save
from tests.fakes.anthropic import text_message
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COMPACTION_THRESHOLD = 10
    settings.AGENT_COMPACTION_KEEP_LAST = 4
    settings.AGENT_COALESCE_SECONDS = 0
    return fake_anthropic


def test_a_summary_written_between_preview_and_confirm_from_forgotten_messages_is_not_kept(world):
    for i in range(2):
        exchange_save("whatsapp", f"Message {i}", "Ok.")
    exchange_save("whatsapp", "J'ai une hernie discale depuis lundi", "Repose-toi bien.")
    for i in range(4):
        exchange_save("whatsapp", f"Autre message {i}", "Ok.")
    # The forget's judge answers no JSON: the word rule decides.
    world.handler = lambda body: text_message("pas du JSON")
    plan = topic_forget_preview(topic="hernie discale")
    assert plan.counts()["exchanges"] == 1

    # Meanwhile the channel's compaction summarises its old messages (the hernia's included).
    world.handler = lambda body: text_message("Le propriétaire a une hernie discale depuis lundi.")
    summary = channel_compact(channel="whatsapp")
    assert summary is not None and "hernie" in summary.content

    # The owner confirms what the preview showed.
    world.handler = lambda body: text_message("pas du JSON")
    result = topic_forget(topic="hernie discale", actor="user", only=plan.item_ids())
    assert result.counts["messages"] == 2
    assert not Message.objects.filter(content__icontains="hernie").exists()

    # The summary written from the forgotten messages still holds the topic...
    latest = channel_summary_latest(channel="whatsapp")
    kept = [s.content for s in Summary.objects.all() if "hernie" in s.content]
    world.handler = lambda body: text_message("D'accord.")
    handle_message(channel="whatsapp", text="On reprend où on en était ?")
    system = world.last.system
    assert "hernie" not in system, system[system.find("hernie") - 200 : system.find("hernie") + 80]
    assert kept == [] and (latest is None or "hernie" not in latest.content), kept


def facts_answer(*facts):
    return json.dumps(
        {
            "facts": [
                {"key": k, "value": v, "type": "event", "sources": s, "ttl": "30d"}
                for k, v, s in facts
            ]
        }
    )


def test_a_digest_fact_written_between_preview_and_confirm_from_a_forgotten_room_message(
    world, settings, eager_tasks, django_capture_on_commit_callbacks
):
    from agent.digest import digest_run

    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel="lobby", observed=True)
    with django_capture_on_commit_callbacks(execute=True):
        said = message_save(
            channel="lobby",
            role="user",
            author="david",
            content="Je pars en Crète samedi avec Julie",
        )
    world.handler = lambda body: text_message("pas du JSON")
    plan = topic_forget_preview(topic="Crète")
    assert plan.item_ids() == [f"message:{said.id}"]

    world.handler = lambda body: text_message(
        facts_answer(("david_vacances", "David part en Crète samedi avec Julie.", [1]))
    )
    with django_capture_on_commit_callbacks(execute=True):
        outcome = digest_run(trigger="manual")
    assert outcome["facts"] == 1

    world.handler = lambda body: text_message("pas du JSON")
    topic_forget(topic="Crète", actor="user", only=plan.item_ids())
    assert not Message.objects.filter(pk=said.id).exists()

    # A fact drawn (provenance: source_message) from a message now forgotten survives.
    survivors = list(
        Fact.objects.filter(value__icontains="Crète").values_list("value", "source_message_id")
    )
    assert survivors == []


def test_through_the_api_the_confirmed_forget_leaves_the_summary_written_since_the_preview(
    world, owner_api
):
    for i in range(3):
        exchange_save("whatsapp", f"Message {i}", "Ok.")
    exchange_save("whatsapp", "Le code du portail est 4512", "Noté.")
    for i in range(3):
        exchange_save("whatsapp", f"Autre message {i}", "Ok.")
    world.handler = lambda body: text_message("pas du JSON")  # the judge: word rule
    preview = owner_api.post(
        "/api/v1/memory/forget", {"topic": "code du portail", "dry_run": True}, format="json"
    ).json()
    ids = [f"message:{e['id']}" for e in preview["exchanges"]]
    assert len(ids) == 1

    world.handler = lambda body: text_message("Le code du portail est 4512.")
    assert channel_compact(channel="whatsapp") is not None

    world.handler = lambda body: text_message("pas du JSON")
    done = owner_api.post(
        "/api/v1/memory/forget", {"topic": "code du portail", "ids": ids}, format="json"
    )
    assert done.status_code in (200, 201), done.content
    summary = channel_summary_latest(channel="whatsapp")
    assert summary is None or "4512" not in summary.content, summary.content
