"""A number of an MCP tool is a JSON number, as in the API's bodies.

QA: over /mcp and stdio, `remember {"importance": "0.5"}` stored 0.5, `search {"limit":
"5"}` and `recent {"limit": true}` were read, `self_forget {"id": "1"}` looked up id 1,
while the API refuses « "importance": "0.5" » (« Un nombre est attendu, sans
guillemets »). The SDK's validation read them loosely; the tools refuse them in French.
"""

from __future__ import annotations

import pytest

from memory.models import Fact

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "tool, arguments, field, said",
    [
        (
            "remember",
            {"key": "ville", "value": "Lyon", "importance": "0.5"},
            "importance",
            "nombre",
        ),
        ("search", {"query": "vélo", "limit": "5"}, "limit", "nombre entier"),
        ("recent", {"limit": "3"}, "limit", "nombre entier"),
        ("recent", {"limit": True}, "limit", "nombre entier"),
        ("self_search", {"query": "lobby", "limit": "2"}, "limit", "nombre entier"),
        ("self_forget", {"id": "1", "reason": "plus vrai"}, "id", "nombre entier"),
    ],
)
def test_a_number_in_quotes_is_refused_in_french(
    mcp, vector_store, local_embedder, tool, arguments, field, said
):
    result = mcp(tool, arguments)

    assert result.is_error, result.content[0].text[:300]
    text = result.content[0].text
    assert field in text and f"doit être un {said}" in text, text
    assert not Fact.all_objects.exists()


def test_a_json_number_is_still_read(mcp, vector_store, local_embedder):
    result = mcp("remember", {"key": "ville", "value": "Lyon", "importance": 1})

    assert not result.is_error, result.content[0].text[:300]
    assert Fact.objects.get(key="ville").importance == 1.0
