"""GET /api/memory/retrievals: the auto-retrieval log, newest first, paginated."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import MemoryRetrieval

pytestmark = pytest.mark.django_db

RETRIEVALS = "/api/memory/retrievals"


def log(minutes_ago: int, channel: str = "whatsapp", **fields) -> MemoryRetrieval:
    return MemoryRetrieval.objects.create(
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
        channel=channel,
        message_preview=f"message d'il y a {minutes_ago} min",
        **fields,
    )


def test_it_lists_the_newest_first_with_everything_logged(agent_api):
    log(30)
    log(
        1,
        memories=[
            {
                "id": "fact:1",
                "kind": "fact",
                "sources": {"semantic": {"rank": 1, "score": 0.81}},
                "rrf": 0.016,
                "text": "épaule",
            }
        ],
        notes=[{"path": "Profil.md", "chars": 120}],
        tokens_added=42,
        timings_ms={"embed": 12.5, "semantic": 3.1},
        total_ms=20.4,
        failed_sources={"notes": "timeout"},
    )
    log(10)
    response = agent_api.get(RETRIEVALS)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["message_preview"] for r in results] == [
        "message d'il y a 1 min",
        "message d'il y a 10 min",
        "message d'il y a 30 min",
    ]
    newest = results[0]
    assert newest["memories"][0]["sources"]["semantic"]["score"] == 0.81
    assert newest["tokens_added"] == 42
    assert newest["failed_sources"] == {"notes": "timeout"}
    assert newest["timings_ms"]["embed"] == 12.5


def test_it_paginates_and_filters_by_channel(agent_api):
    for minutes in range(5):
        log(minutes, channel="whatsapp")
    log(100, channel="dashboard")
    page = agent_api.get(RETRIEVALS, {"page_size": 2}).json()
    assert page["count"] == 6
    assert len(page["results"]) == 2
    assert page["next"]
    only = agent_api.get(RETRIEVALS, {"channel": "dashboard"}).json()
    assert [r["channel"] for r in only["results"]] == ["dashboard"]


def test_a_page_out_of_range_is_a_404_json(agent_api):
    response = agent_api.get(RETRIEVALS, {"page": 99})
    assert response.status_code == 404
    assert response.json()["message"]


def test_the_agent_cannot_tell_a_forgotten_memory_was_in_the_log(agent_api, owner_api):
    """QA: after the owner forgot a fact, the agent's /retrievals still listed its entry
    (« fact:27 », its sources and scores, the text « [oublié] »): the agent learnt a fact
    had been there and was forgotten, which no other path tells it. Its entry leaves the
    agent's answer; the owner's keeps the placeholder."""
    from memory.services.preview_rule import REDACTED

    kept = {"id": "fact:1", "kind": "fact", "sources": {}, "rrf": 0.02, "text": "épaule"}
    gone = {"id": "fact:27", "kind": "fact", "sources": {"t1": {}}, "rrf": 0.03, "text": REDACTED}
    log(1, memories=[gone, kept])

    agents = agent_api.get(RETRIEVALS).json()["results"][0]["memories"]
    owners = owner_api.get(RETRIEVALS).json()["results"][0]["memories"]

    assert [m["id"] for m in agents] == ["fact:1"]
    assert "fact:27" not in agent_api.get(RETRIEVALS).content.decode()
    assert [m["id"] for m in owners] == ["fact:27", "fact:1"]


def test_the_agent_does_not_see_a_row_whose_message_a_forget_took(agent_api, owner_api):
    """Review: the message preview a forget redacted (« [oublié] ») still reached the
    agent, with its channel and time: that row leaves the agent's log."""
    from memory.services.preview_rule import REDACTED

    taken = log(2)
    MemoryRetrieval.objects.filter(pk=taken.pk).update(message_preview=REDACTED)
    log(1)

    agents = agent_api.get(RETRIEVALS).json()
    owners = owner_api.get(RETRIEVALS).json()

    assert agents["count"] == 1 and REDACTED not in str(agents)
    assert owners["count"] == 2 and REDACTED in str(owners)


def test_without_being_told_the_serializer_shows_the_agents_scope():
    """Review: a caller forgetting the owner's context fails closed."""
    from memory.api.serializers import MemoryRetrievalSerializer
    from memory.services.preview_rule import REDACTED

    row = log(1, memories=[{"id": "fact:27", "kind": "fact", "text": REDACTED}])

    assert MemoryRetrievalSerializer(row).data["memories"] == []
