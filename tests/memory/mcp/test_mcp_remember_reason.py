"""MCP `remember` writes explicitly: its history says « Créé » then « Modifié » by the agent,
never « Extrait d'une conversation » (tests/memory/services/test_tool_writes_reason.py)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, RevisionReason

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_is_recorded_created_then_edited(mcp, vector_store, local_embedder, settings):
    settings.ANTHROPIC_API_KEY = ""
    first = mcp("remember", {"key": "velo", "value": "un vélo bleu"})
    assert not first.is_error, first.content[0].text
    again = mcp("remember", {"key": "velo", "value": "un vélo vert"})
    assert not again.is_error, again.content[0].text

    fact = Fact.objects.get(key="velo")
    assert list(fact.revisions.order_by("id").values_list("actor", "reason")) == [
        (Actor.AGENT, RevisionReason.CREATED),
        (Actor.AGENT, RevisionReason.EDITED),
    ]
