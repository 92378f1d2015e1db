"""A delete's reason is capped at REASON_MAX_CHARS (500) on every path: MCP's self_forget
as the agent's memory__delete_self and /memory; an overlong one deletes nothing."""

from __future__ import annotations

import pytest

from memory.exceptions import MemoryServiceError
from memory.models import Actor, Fact, FactKind
from memory.services.self_memory import REASON_MAX_CHARS, agent_item_delete, agent_item_store

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def item():
    return agent_item_store(
        kind=FactKind.SELF, category="capability", content="Je peux lire le Lobby", use_llm=False
    ).item


@pytest.mark.parametrize("length", [REASON_MAX_CHARS + 1, 200_000])
def test_self_forget_refuses_an_overlong_reason_and_deletes_nothing(mcp, item, length):
    result = mcp("self_forget", {"id": item.pk, "reason": "x" * length})

    assert result.is_error and "reason" in result.content[0].text, result.content[0].text
    assert not Fact.all_objects.get(pk=item.pk).forgotten


def test_self_forget_keeps_a_reason_of_500_characters(mcp, item):
    result = mcp("self_forget", {"id": item.pk, "reason": "x" * REASON_MAX_CHARS})

    assert not result.is_error, result.content[0].text
    assert Fact.all_objects.get(pk=item.pk).revisions.first().note == "x" * REASON_MAX_CHARS


def test_the_delete_every_path_calls_refuses_an_overlong_reason_in_french(item):
    with pytest.raises(MemoryServiceError, match="La raison est limitée à 500 caractères"):
        agent_item_delete(kind=FactKind.SELF, item_id=item.pk, reason="x" * 501, actor=Actor.AGENT)
    assert not Fact.all_objects.get(pk=item.pk).forgotten
