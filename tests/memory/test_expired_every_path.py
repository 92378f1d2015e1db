"""An expired fact the purge has not reached yet (up to ten minutes) is returned by no read
path: the API's searches, lists, context and preview, the agent's tools, MCP."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.tools import ToolContext, tool_run
from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_row
from memory.services.messages import message_save
from memory.services.retrieval import retrieval_warm
from tests.memory.mcp.conftest import mcp  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

SECRET = "Zorglubine"
CODE = "4812"  # in the fact's value only: a path that shows it leaks the expired fact
QUESTION = f"quel est le code du portail {SECRET} ?"


@pytest.fixture
def expired(vector_store, local_embedder):
    """An identity fact, important, indexed and read once (the facts view's cache), then
    expired: its point and its cached copy are still there, only the purge would remove them."""
    fact = fact_store(
        key="code_portail",
        value=f"Le code du portail {SECRET} est {CODE} chez Marcel",
        memory_type="identity",
        importance=0.95,
        ttl="1h",
    )[0]
    index_row(KIND_FACT, fact.id)
    retrieval_warm()
    Fact.all_objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    return fact


def _leaks(seen: dict[str, str]) -> dict[str, str]:
    return {path: text[:300] for path, text in seen.items() if CODE in text}


def test_no_api_read_returns_an_expired_fact(owner_api, agent_api, expired):
    seen = {}
    for mode in ("semantic", "text", "hybrid"):
        seen[f"search {mode}"] = agent_api.get(
            "/api/memory/search", {"q": f"code du portail {SECRET}", "mode": mode}
        ).content.decode()
    seen["recent"] = agent_api.get("/api/memory/recent-facts").content.decode()
    seen["list"] = agent_api.get("/api/memory/facts").content.decode()
    seen["context"] = agent_api.post(
        "/api/memory/context", {"message": QUESTION, "channel": "gateway"}, format="json"
    ).content.decode()
    seen["preview"] = owner_api.post(
        "/api/memory/preview", {"message": QUESTION, "channel": "x"}, format="json"
    ).content.decode()

    assert not _leaks(seen)


def test_no_agent_tool_returns_an_expired_fact(expired):
    request = message_save(channel="mission_control", role="user", content="(la demande)")
    context = ToolContext(channel="mission_control", message_ids=(request.id,))
    seen = {
        name: tool_run(name=name, tool_input=tool_input, context=context).content
        for name, tool_input in [
            ("memory__search", {"query": f"code du portail {SECRET}"}),
            ("memory__search_text", {"query": SECRET}),
            ("memory__recent", {}),
        ]
    }

    assert not _leaks(seen)


@pytest.mark.django_db(transaction=True)
def test_no_mcp_tool_returns_an_expired_fact(expired, mcp):  # noqa: F811
    seen = {}
    for name, args in [
        ("search", {"query": f"code du portail {SECRET}"}),
        ("search", {"query": SECRET, "mode": "text"}),
        ("recent", {}),
        ("context", {"message": QUESTION}),
    ]:
        result = mcp(name, args)
        texts = [content.text for content in result.content]
        seen[f"{name} {args}"] = json.dumps(texts, ensure_ascii=False)

    assert not _leaks(seen)
