"""The owner's rename of a fact's key is recorded and sticks (QA: the rename's revision
said nothing changed, and the agent's late statement of the old key came back beside the
renamed fact, both in the prompt)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.dedup import fact_remember
from memory.services.facts import fact_update
from memory.services.messages import message_save

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
