"""MCP `remember` with `version`: a write made on the fact as read, over the SDK's own client.

QA: a client that read a fact (recent, remember), then remembered a new value after the
owner or another client changed it, silently overwrote that change. The fact's ``version``
(what the reads return) given back to ``remember`` makes the write conditional, as
If-Match does in the API: changed since, nothing is written and the tool says so in French.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactRevision
from memory.selectors import FACT_NOT_FOUND_MESSAGE
from memory.services.fact_revisions import FACT_CHANGED_MESSAGE, fact_version
from memory.services.facts import fact_store, fact_update
from tests.memory.mcp.test_mcp_http import _run, token  # noqa: F401 (token is a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def test_remember_with_a_version_writes_only_on_the_fact_as_read(
    live_server,
    token,  # noqa: F811
):
    velo, _ = fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)
    read = fact_version(velo)
    fact_update(fact=velo, actor=Actor.USER, subjects=["sport"])  # the owner, meanwhile
    revisions = FactRevision.objects.filter(fact=velo).count()

    async def steps(client):
        out = {"recent": await client.call_tool("recent", {"limit": 5})}
        out["stale"] = await client.call_tool(
            "remember", {"key": "velo", "value": "un vélo vert", "version": read}
        )
        current = out["recent"].structured_content["facts"][0]["version"]
        out["current"] = await client.call_tool(
            "remember", {"key": "velo", "value": "un vélo vert", "version": current}
        )
        out["unknown"] = await client.call_tool(
            "remember", {"key": "moto", "value": "une moto", "version": current}
        )
        return out

    out = _run(f"{live_server.url}/mcp", {"Authorization": f"Bearer {token}"}, steps)

    assert out["recent"].structured_content["facts"][0]["key"] == "velo"
    assert out["stale"].is_error
    assert out["stale"].content[0].text == FACT_CHANGED_MESSAGE.format(value="un vélo bleu")
    assert not out["current"].is_error, out["current"].content[0].text
    answer = out["current"].structured_content
    assert answer["action"] == "updated"
    fact = Fact.objects.get(key="velo")
    assert fact.value == "un vélo vert"
    assert answer["fact"]["version"] == fact_version(fact)
    assert FactRevision.objects.filter(fact=velo).count() == revisions + 1
    assert out["unknown"].is_error
    assert out["unknown"].content[0].text == FACT_NOT_FOUND_MESSAGE.format(key="moto")
    assert not Fact.all_objects.filter(key="moto").exists()


def test_remember_without_a_version_is_taken_as_before(mcp, vector_store, local_embedder):
    velo, _ = fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)
    fact_update(fact=velo, actor=Actor.USER, subjects=["sport"])

    result = mcp("remember", {"key": "velo", "value": "un vélo vert"})

    assert not result.is_error, result.content[0].text
    assert Fact.objects.get(key="velo").value == "un vélo vert"


@pytest.mark.parametrize("version", ["", "   "])
def test_an_empty_version_is_refused_as_such(mcp, vector_store, local_embedder, version):
    """QA: « version: "" » was answered « Ce fait a changé », as a stale version."""
    fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)

    result = mcp("remember", {"key": "velo", "value": "un vélo vert", "version": version})

    assert result.is_error
    assert "version : vide" in result.content[0].text, result.content[0].text
    assert Fact.objects.get(key="velo").value == "un vélo bleu"


def test_remember_sent_again_with_its_version_is_not_refused_by_its_own_write(
    mcp, vector_store, local_embedder
):
    """The same call again, its answer lost (over HTTP): the fact holds what it states, so
    it is no change made since, as the API's PATCH with its If-Match (QA 8a)."""
    velo, _ = fact_store(key="velo", value="un vélo bleu", actor=Actor.AGENT)
    ask = {"key": "velo", "value": "un vélo vert", "version": fact_version(velo)}
    first = mcp("remember", ask)
    assert not first.is_error, first.content[0].text
    revisions = FactRevision.objects.filter(fact=velo).count()

    again = mcp("remember", ask)

    assert not again.is_error, again.content[0].text
    assert again.structured_content["action"] == "noop"
    assert FactRevision.objects.filter(fact=velo).count() == revisions
    # Another value on that old version is still a change made since.
    other = mcp("remember", {**ask, "value": "un vélo rouge"})
    assert other.is_error
    assert other.content[0].text == FACT_CHANGED_MESSAGE.format(value="un vélo vert")
