"""A fact erased between a request's lookup and its write answers 404 in French, never 500.

QA (concurrent PATCH, DELETE, restore and the page's forget beside an erasure): the
request found the fact, the erasure deleted it, then the service's locked read raised
Fact.DoesNotExist: a 500, in the API and on /memory. Reproduced here by erasing the fact
at the moment the service takes its lock.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services import fact_revisions
from memory.services.erasing import fact_erase
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

NOT_FOUND = "Aucun fait avec la clé « code_coffre »."


@pytest.fixture
def erased_when_locked(monkeypatch):
    """The fact is erased by another request just before the service locks its row."""
    fact, _ = fact_store(key="code_coffre", value="Le code est 4821")
    Fact.objects.filter(pk=fact.pk).update(forgotten=False)
    locked = fact_revisions.fact_locked
    erasing = []

    def erased_first(target):
        if not erasing:  # the erasure's own lock is the real one
            erasing.append(target.pk)
            fact_erase(fact=Fact.all_objects.get(pk=target.pk), actor=Actor.USER)
        return locked(target)

    monkeypatch.setattr(fact_revisions, "fact_locked", erased_first)
    return fact


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("patch", "/api/memory/facts/code_coffre", {"value": "Le code est 9999"}),
        ("delete", "/api/memory/facts/code_coffre", None),
    ],
)
def test_the_api_answers_404_in_french(erased_when_locked, agent_api, method, path, body):
    response = getattr(agent_api, method)(path, body, format="json")

    assert response.status_code == 404, response.content
    assert response.json()["message"] == NOT_FOUND


def test_the_api_restore_answers_404_in_french(erased_when_locked, staff_api):
    Fact.all_objects.filter(pk=erased_when_locked.pk).update(forgotten=True)

    response = staff_api.post("/api/memory/facts/code_coffre/restore", format="json")

    assert response.status_code == 404, response.content
    assert response.json()["message"] == NOT_FOUND


@pytest.mark.parametrize("action", ["forget", "restore"])
def test_the_page_answers_404(erased_when_locked, staff_client, action):
    if action == "restore":
        Fact.all_objects.filter(pk=erased_when_locked.pk).update(forgotten=True)

    response = staff_client.post(f"/memory/facts/code_coffre/{action}/", **HTMX)

    assert response.status_code == 404  # the erasure simulated here rolls back with the
    # request's transaction; a real one, committed by another request, stays
