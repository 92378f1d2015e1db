"""agent_item_store says what its own write did, not what its first look at the key found.

The item's key is checked before the similarity search and the LLM's decision, which
hold no lock: a concurrent `self_remember` of the same words may create the item
first. Here that writer lands while this call decides (the same race as
fact_remember's: tests/memory/services/test_dedup_concurrent_new_key.py).
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactKind, FactSource, RevisionReason
from memory.services import index_queue, self_memory
from memory.services.facts import fact_store
from memory.services.self_memory import agent_item_store
from memory.services.self_memory_validate import agent_item_key

pytestmark = pytest.mark.django_db

TEXT = "Je sais résumer un long fil de discussion en trois points"


@pytest.fixture
def another_writer_first(monkeypatch, settings):
    """A concurrent call creates the item once this one has found its key new."""
    settings.ANTHROPIC_API_KEY = ""
    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)  # no indexing
    key = agent_item_key(kind=FactKind.SELF, content=TEXT)

    def decide_after_another_write(**kwargs):
        fact_store(
            key=key,
            value=TEXT,
            kind=FactKind.SELF,
            category="capability",
            importance=self_memory.DEFAULT_IMPORTANCE["capability"],
            source=FactSource.CONVERSATION,
            actor=Actor.AGENT,
            extracted=False,
        )
        return "ADD", None, "rule"  # nothing similar when it looked

    monkeypatch.setattr(self_memory, "_decide", decide_after_another_write)
    return key


def test_an_item_created_meanwhile_with_the_same_words_is_a_noop(another_writer_first):
    result = agent_item_store(kind=FactKind.SELF, category="capability", content=TEXT)

    assert result.action == "noop"
    fact = Fact.all_objects.get(key=another_writer_first)
    assert list(fact.revisions.values_list("reason", flat=True)) == [RevisionReason.CREATED]


def test_an_item_created_meanwhile_in_another_category_is_updated(another_writer_first):
    result = agent_item_store(kind=FactKind.SELF, category="limitation", content=TEXT)

    assert result.action == "updated"
    assert Fact.all_objects.filter(key=another_writer_first).count() == 1
    assert Fact.all_objects.get(key=another_writer_first).category == "limitation"
