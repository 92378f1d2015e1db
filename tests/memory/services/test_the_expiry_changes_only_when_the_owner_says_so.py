"""An owner edit changes a fact's expiry only when it says so, and what it says stands."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactRevision
from memory.services.dedup import fact_remember
from memory.services.facts import fact_store, fact_update
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


def test_a_dashboard_edit_with_an_empty_ttl_keeps_the_agents_expiry(staff_client):
    """The edit form re-sends the value unchanged; its TTL says "Vide : expiration inchangée"."""
    fact, _ = fact_store(
        key="rdv_velo", value="Réparer le vélo demain", ttl="1d", actor=Actor.AGENT
    )

    response = staff_client.post(
        f"/memory/facts/{fact.key}/edit/",
        {"value": fact.value, "memory_type": "fact", "importance": "0.9", "ttl": ""},
        **HTMX,
    )

    assert response.status_code == 200
    edited = Fact.objects.get(pk=fact.pk)
    assert (edited.importance, edited.expires_at) == (0.9, fact.expires_at)


def test_the_owners_forever_is_not_overwritten_by_the_agents_ttl(owner_api):
    fact_store(key="velo", value="Le vélo est au garage", actor=Actor.AGENT)
    response = owner_api.patch("/api/memory/facts/velo", {"ttl": None}, format="json")
    assert response.status_code == 200, response.content

    fact_remember(key="velo", value="Le vélo est au garage", ttl="1h", actor=Actor.AGENT)

    assert Fact.objects.get(key="velo").expires_at is None


def test_saying_forever_of_a_fact_without_expiry_is_kept_without_a_revision():
    """Nothing changed, so the history records nothing; the owner's word is kept all the same."""
    fact_store(key="velo", value="Le vélo est au garage", actor=Actor.AGENT)
    before = Fact.objects.get(key="velo")
    revisions = FactRevision.objects.count()

    fact_update(fact=before, actor=Actor.USER, ttl="")

    kept = Fact.objects.get(pk=before.pk)
    assert "expires_at" in kept.owner_fields
    assert (kept.version, kept.updated_at) == (before.version, before.updated_at)  # no re-embedding
    assert FactRevision.objects.count() == revisions
