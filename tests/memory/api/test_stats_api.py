"""GET /api/memory/stats: counts per tier and indexing state, vectors, last indexing."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Fact, IndexState, MemoryRetrieval, Message, Summary
from memory.selectors import memory_stats_get
from memory.services.facts import fact_forget, fact_store

pytestmark = pytest.mark.django_db

STATS = "/api/memory/stats"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def memory_rows():
    fact_store(key="a", value="actif")
    forgotten, _ = fact_store(key="b", value="oublié")
    fact_forget(fact=forgotten, actor=Actor.USER)
    expired, _ = fact_store(key="c", value="expiré")
    Fact.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(hours=1))
    indexed_at = timezone.now() - timedelta(minutes=5)
    Fact.objects.filter(key="a").update(index_state=IndexState.INDEXED, indexed_at=indexed_at)
    Message.objects.create(channel="c", role="user", content="un", compacted=True)
    Message.objects.create(
        channel="c", role="assistant", content="deux", index_state=IndexState.FAILED
    )
    Summary.objects.create(channel="c", content="résumé")
    MemoryRetrieval.objects.create(channel="c", message_preview="salut")
    return indexed_at


def test_stats_count_each_tier_and_state(staff_api, memory_rows, vector_store):
    response = staff_api.get(STATS)
    assert response.status_code == 200
    body = response.json()
    assert body["facts"]["total"] == 3
    assert body["facts"]["active"] == 1
    assert body["facts"]["forgotten"] == 1
    assert body["facts"]["expired"] == 1
    assert body["facts"]["index"]["indexed"] == 1
    assert body["messages"]["total"] == 2
    assert body["messages"]["compacted"] == 1
    assert body["messages"]["index"]["failed"] == 1
    assert body["messages"]["index"]["pending"] == 1
    assert body["summaries"] == {"total": 1, "index": {**body["summaries"]["index"], "pending": 1}}
    assert body["retrievals"]["total"] == 1
    assert body["vectors"]["status"] == "ok"
    assert body["vectors"]["collections"] == {"conversations": 0, "knowledge": 0, "live": 0}
    assert body["last_indexed_at"].startswith(
        memory_rows.astimezone(timezone.get_current_timezone()).strftime("%Y-%m-%dT%H:%M")
    )


def test_stats_say_unavailable_when_qdrant_is_unreachable(staff_api, settings, memory_rows):
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = f"http://127.0.0.1:{closed_port()}"
    settings.QDRANT_TIMEOUT_S = 1.0
    try:
        response = staff_api.get(STATS)
    finally:
        vector_store_reset()
    assert response.status_code == 200
    vectors = response.json()["vectors"]
    assert vectors["status"] == "unavailable"
    assert vectors["error"]
    assert vectors["collections"] == {"conversations": None, "knowledge": None, "live": None}
    assert response.json()["facts"]["total"] == 3


def test_the_selector_can_skip_qdrant():
    stats = memory_stats_get(include_vectors=False)
    assert stats["vectors"]["status"] == "skipped"
    assert stats["last_indexed_at"] is None


def test_the_agent_cannot_tell_that_the_owner_forgot_facts(memory_rows, agent_api, staff_api):
    """QA: the agent's token read `"forgotten": 2` in /stats, where it may neither read a
    forgotten fact nor tell it was there. The owner still reads the count."""
    owners = staff_api.get(STATS).json()["facts"]
    agents = agent_api.get(STATS).json()["facts"]

    assert (owners["total"], owners["forgotten"]) == (3, 1)
    assert "forgotten" not in agents
    assert agents["total"] == agents["active"] + agents["expired"] == 2
