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


def test_it_lists_the_newest_first_with_everything_logged(owner_api):
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
    response = owner_api.get(RETRIEVALS)
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


def test_it_paginates_and_filters_by_channel(owner_api):
    for minutes in range(5):
        log(minutes, channel="whatsapp")
    log(100, channel="dashboard")
    page = owner_api.get(RETRIEVALS, {"page_size": 2}).json()
    assert page["count"] == 6
    assert len(page["results"]) == 2
    assert page["next"]
    only = owner_api.get(RETRIEVALS, {"channel": "dashboard"}).json()
    assert [r["channel"] for r in only["results"]] == ["dashboard"]


def test_a_page_out_of_range_is_a_404_json(owner_api):
    response = owner_api.get(RETRIEVALS, {"page": 99})
    assert response.status_code == 404
    assert response.json()["message"]


def test_the_log_is_the_owners(agent_api, owner_api):
    """QA, three passes: after a forget, the agent's /retrievals told a memory had been
    there (an entry « [oublié] » with its id, sources and ranks; then, filtered, gaps in
    the ranks, the ids and the token counts). The log is the owner's; the agent reads what
    each /context answer gave it."""
    from memory.services.preview_rule import REDACTED

    log(1, memories=[{"id": "fact:27", "kind": "fact", "text": REDACTED}], tokens_added=40)

    refused = agent_api.get(RETRIEVALS)

    assert refused.status_code == 403
    assert "fact:27" not in refused.content.decode()
    assert "réservée au propriétaire" in refused.json()["message"]
    assert owner_api.get(RETRIEVALS).json()["results"][0]["memories"][0]["text"] == REDACTED
