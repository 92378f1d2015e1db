"""MCP ``self_search`` takes a query of spaces only and answers with items « par le sens »,
where every other tool refuses a blank text in French (``search`` and ``context``: « Ce champ
ne peut être vide. », ``self_remember``: « Le contenu est vide. », ``self_forget``'s reason)."""

from __future__ import annotations

import pytest

from memory.models import FactKind
from memory.services.self_memory import agent_item_store
from tests.memory.mcp.conftest import mcp  # noqa: F401

pytestmark = pytest.mark.django_db


def test_search_refuses_a_blank_query(mcp):
    assert mcp("search", {"query": "   "}).is_error


def test_self_search_refuses_a_blank_query(mcp, settings):
    settings.ANTHROPIC_API_KEY = ""
    agent_item_store(
        kind=FactKind.SELF, category="capability", content="Je peux lire les notes Obsidian"
    )
    result = mcp("self_search", {"query": "   "})
    assert result.is_error, result.content[0].text
