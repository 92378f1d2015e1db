"""MCP `self_search` refuses a query that shows nothing, as every other tool refuses blank
text (QA: « » answered the agent's items « par le sens »)."""

from __future__ import annotations

import pytest

from memory.models import FactKind
from memory.services.self_memory import agent_item_store

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("query", ["", "   ", "\u200b"])
def test_self_search_refuses_a_blank_query(mcp, settings, query):
    settings.ANTHROPIC_API_KEY = ""
    agent_item_store(kind=FactKind.SELF, category="capability", content="Je lis les notes")
    result = mcp("self_search", {"query": query})
    assert result.is_error, result.content[0].text
    said = result.content[0].text
    assert "La recherche est vide" in said or "au moins 1 caractère" in said, said
    assert not mcp("self_search", {"query": "notes"}).is_error
