"""MCP `remember` refuses a key of « . » or « .. » in French (the one key rule:
tests/memory/test_dot_keys.py)."""

from __future__ import annotations

import pytest

from memory.models import Fact
from tests.memory.test_dot_keys import DOTS_SAID

pytestmark = pytest.mark.django_db(transaction=True)


def test_mcp_remember_refuses_it(mcp, vector_store, local_embedder, settings):
    settings.ANTHROPIC_API_KEY = ""
    answer = mcp("remember", {"key": "..", "value": "un vélo bleu"})
    assert answer.is_error and DOTS_SAID in answer.content[0].text, answer.content[0].text
    assert not Fact.all_objects.exists()
