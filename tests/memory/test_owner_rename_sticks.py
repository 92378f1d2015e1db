"""The owner's rename of a fact's key is recorded and sticks (QA: the rename's revision
said nothing changed, and the agent's late statement of the old key came back beside the
renamed fact, both in the prompt)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Fact, FactRevision, Message
from memory.services.dedup import fact_remember
from memory.services.facts import fact_store, fact_update
from memory.services.messages import message_save
from tests.agent.conftest import lobby  # noqa: F401
from tests.fakes.anthropic import fake_anthropic, text_message  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def renamed(settings):
    """« ville = Paris », learnt from a message, which the owner renamed « ville_natale »."""
    settings.ANTHROPIC_API_KEY = ""
    said = message_save(channel="whatsapp", role="user", content="Je suis né à Paris")
    fact = fact_remember(
        key="ville", value="Paris", actor=Actor.AGENT, source_message_id=said.id
    ).fact
    fact_update(fact=fact, actor=Actor.ADMIN, key="ville_natale")
    return said, Fact.objects.get(pk=fact.pk)


def test_the_renames_revision_says_the_key_changed(renamed):
    _, fact = renamed
    rename = fact.revisions.order_by("-id").first()
    assert rename.actor == Actor.ADMIN
    assert rename.changes == {"key": ["ville", "ville_natale"]}
    creation = fact.revisions.order_by("id").first()
    assert "key" not in creation.changes  # a creation's key is no change


@pytest.mark.parametrize("stated", ["ville", "Ville"])
def test_a_late_statement_of_the_old_key_lands_on_the_renamed_fact(renamed, stated):
    said, fact = renamed
    result = fact_remember(key=stated, value="Paris", actor=Actor.AGENT, source_message_id=said.id)
    assert result.fact.pk == fact.pk
    assert list(Fact.objects.values_list("key", "value")) == [("ville_natale", "Paris")]


def test_a_statement_of_a_later_message_is_a_fact_of_its_own(renamed):
    """Said after the rename, « ville » is news (where the owner lives now)."""
    _, fact = renamed
    later = message_save(channel="whatsapp", role="user", content="J'habite à Lyon")
    fact_remember(key="ville", value="Lyon", actor=Actor.AGENT, source_message_id=later.id)
    assert sorted(Fact.objects.values_list("key", "value")) == [
        ("ville", "Lyon"),
        ("ville_natale", "Paris"),
    ]


def _room_says(content: str, at) -> Message:
    return Message.objects.create(
        channel="lobby", role="user", author="david", observed=True, content=content, created_at=at
    )


def test_news_after_the_rename_digested_with_an_older_message_is_a_fact_of_its_own(lobby):  # noqa: F811
    """Review: the digest dates a statement by its batch's oldest message (for the forget
    checks); the rename rule read that date, and news said after the rename landed on
    the renamed fact: where the owner lives now was stored nowhere."""
    from agent.digest import digest_run

    now = timezone.now()
    fact, _ = fact_store(key="ville", value="Paris", actor=Actor.AGENT)
    _room_says("Quelqu'un a vu mes clés de voiture ?", now - timedelta(hours=2))
    fact_update(fact=fact, actor=Actor.ADMIN, key="ville_natale")  # the owner's rename
    FactRevision.objects.filter(fact=fact, changes__has_key="key").update(
        created_at=now - timedelta(hours=1)
    )
    _room_says("J'habite à Lyon maintenant", now - timedelta(minutes=5))
    stated = {"key": "ville", "value": "Lyon", "type": "fact", "sources": [2]}

    def answer(body):
        if "salons de discussion" in json.dumps(body.get("system"), ensure_ascii=False):
            return text_message(json.dumps({"facts": [stated]}))
        return text_message('{"action": "ADD"}')  # dedup: another fact than « ville_natale »

    lobby.handler = answer

    digest_run(trigger="manual")

    assert sorted(Fact.objects.values_list("key", "value")) == [
        ("ville", "Lyon"),
        ("ville_natale", "Paris"),
    ]
