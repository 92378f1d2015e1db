"""fact_remember says what its own write did, not what its first look at the key found.

The key is checked outside any transaction (the embedding and the LLM hold no lock); a
concurrent writer may create it before this statement's write. Here that writer lands
while the candidates are searched, the moment the race leaves open (QA: concurrent MCP
`remember` calls answered « added » twice; tests/memory/mcp for the threads).
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactSource, RevisionReason
from memory.services import dedup, index_queue
from memory.services.dedup import fact_remember
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db

KEY = "marie_anniversaire"
FIRST = "L'anniversaire de Marie est le 3 mai"


@pytest.fixture
def another_writer_first(monkeypatch, settings):
    """A concurrent `remember` creates the key once this one has found it new."""
    settings.ANTHROPIC_API_KEY = ""  # dedup decides by its rule
    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)  # no indexing

    def candidates_after_another_write(**kwargs):
        fact_store(key=KEY, value=FIRST, source=FactSource.TOOL, actor=Actor.AGENT, extracted=False)
        return []  # nothing similar when it looked

    monkeypatch.setattr(dedup, "fact_candidates", candidates_after_another_write)


def _reasons() -> list[str]:
    return list(Fact.objects.get(key=KEY).revisions.order_by("id").values_list("reason", flat=True))


def test_a_new_key_created_meanwhile_is_updated_not_added(another_writer_first):
    result = fact_remember(key=KEY, value=f"{FIRST} 1990", source=FactSource.TOOL)

    assert result.action == "updated"
    assert result.fact.value == f"{FIRST} 1990"
    assert Fact.all_objects.filter(key=KEY).count() == 1
    assert _reasons() == [RevisionReason.CREATED, RevisionReason.EDITED]


def test_a_new_key_created_meanwhile_with_the_same_words_is_a_noop(another_writer_first):
    result = fact_remember(key=KEY, value=FIRST, source=FactSource.TOOL)

    assert result.action == "noop"
    assert _reasons() == [RevisionReason.CREATED]  # nothing written: nothing said changed
