"""A fact's subjects follow one rule on every path (the model's): /memory refuses what the
API refuses — a NUL character, a subject past 100 characters, more than 50 subjects."""

from __future__ import annotations

import pytest

from memory.models import Fact
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "subjects",
    ["ca\x00fe", "x" * 101, ", ".join(f"s{i}" for i in range(51))],
    ids=["nul", "too-long", "too-many"],
)
def test_memory_refuses_subjects_the_api_refuses(staff_client, subjects):
    created = staff_client.post(
        "/memory/facts/",
        {"key": "cafe", "value": "Café serré", "memory_type": "fact", "subjects": subjects},
        **HTMX,
    )
    assert created.status_code == 422, created.status_code
    assert not Fact.all_objects.filter(key="cafe").exists()

    fact_store(key="the", value="Thé vert", subjects=["boisson"])
    edited = staff_client.post(
        "/memory/facts/the/edit/",
        {"value": "Thé vert", "memory_type": "fact", "importance": "0.5", "subjects": subjects},
        **HTMX,
    )
    assert edited.status_code == 422, edited.status_code
    assert Fact.objects.get(key="the").subjects == ["boisson"]


def test_memory_takes_subjects_within_the_rule(staff_client):
    response = staff_client.post(
        "/memory/facts/",
        {"key": "cafe", "value": "Café serré", "memory_type": "fact", "subjects": "matin, x"},
        **HTMX,
    )
    assert response.status_code == 200
    assert Fact.objects.get(key="cafe").subjects == ["matin", "x"]
