"""self_search refuses what every other search refuses: a NUL character, a query over the
agent's search tools' 500 characters; in French, before anything is read."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "query, said", [("fini\x00", "nul"), ("x" * 501, "dépasse 500 caractères")]
)
def test_self_search_refuses_a_nul_or_an_overlong_query_in_french(
    query, said, mcp, vector_store, local_embedder
):
    result = mcp("self_search", {"query": query})

    assert result.is_error and said in result.content[0].text, result.content[0].text


def test_a_query_of_500_characters_is_searched(mcp, vector_store, local_embedder):
    assert not mcp("self_search", {"query": "x" * 500}).is_error
