"""The digest dates a fact by its batch's oldest message, not by the one the LLM numbers:
a misnumbered answer cannot pass a statement older than a forget or an erasure off as
news (audit 11). The fact still names the source the LLM numbered."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Fact, Message
from memory.services.channels import channel_settings_set
from memory.services.facts import fact_forget, fact_store
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

VALUE = "David part en Grèce pour une semaine."


def _room_says(content: str, at) -> Message:
    return Message.objects.create(
        channel="lobby", role="user", author="david", observed=True, content=content, created_at=at
    )


def _forget(fact: Fact, how: str, now) -> None:
    if how == "forgotten":  # one by one, an hour ago: after the first message
        fact_forget(fact=fact, actor=Actor.USER)
        Fact.all_objects.filter(pk=fact.pk).update(forgotten_at=now - timedelta(hours=1))
    else:  # erased for good, now
        from memory.services.erasing import fact_erase

        fact_erase(fact=fact, actor=Actor.USER)


@pytest.mark.parametrize("how", ["forgotten", "erased"])
@pytest.mark.parametrize("sources", [[1], [2]], ids=["numbered_right", "numbered_wrong"])
def test_a_room_message_older_than_the_owners_forget_does_not_bring_the_fact_back(
    how, sources, vector_store, local_embedder, fake_anthropic, settings
):
    from agent.digest import digest_run

    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel="lobby", observed=True)
    now = timezone.now()
    # David said it in the room (the digest has not read it yet)...
    _room_says("Je pars en Grèce pour une semaine", now - timedelta(hours=2))
    # ... the owner had the fact, and forgot or erased it since.
    fact, _ = fact_store(key="david_voyage", value=VALUE, actor=Actor.USER)
    _forget(fact, how, now)
    # Later, the room chats about something else.
    _room_says("Quelqu'un a vu mes clés de voiture ?", now + timedelta(minutes=5))
    # The LLM states the fact of message 1, numbering its source 1 or (wrongly) 2.
    stated = {"key": "david_voyage", "value": VALUE, "type": "event", "sources": sources}
    fake_anthropic.handler = lambda body: text_message(json.dumps({"facts": [stated]}))

    digest_run(trigger="manual")

    back = Fact.objects.filter(value=VALUE, forgotten=False).values_list("key", "source_message_id")
    assert list(back) == []


def test_news_stated_by_the_batch_names_the_message_the_llm_numbered(
    vector_store, local_embedder, fake_anthropic, settings
):
    """Nothing forgotten: the fact is stored, with the source the LLM gave (not the oldest)."""
    from agent.digest import digest_run

    settings.ANTHROPIC_MAX_RETRIES = 0
    channel_settings_set(channel="lobby", observed=True)
    now = timezone.now()
    _room_says("Quelqu'un a vu mes clés de voiture ?", now - timedelta(minutes=10))
    second = _room_says("Je pars en Grèce pour une semaine", now - timedelta(minutes=5))
    stated = {"key": "david_voyage", "value": VALUE, "type": "event", "sources": [2]}
    fake_anthropic.handler = lambda body: text_message(json.dumps({"facts": [stated]}))

    digest_run(trigger="manual")

    assert list(Fact.objects.filter(value=VALUE).values_list("source_message_id", flat=True)) == [
        second.id
    ]
