"""A fact's history on /memory reads as the owner reads the fact: French names, local dates.

QA: after the owner gave « user_job » a TTL of 2w, its history said « expires_at : — →
2026-12-14T13:52:50.526949+00:00 » while the card said « 14/12/2026 14:52 », and
« Modifié par utilisateur ».
"""

import pytest
from django.utils import timezone

from memory.models import Actor
from memory.services.facts import fact_store, fact_update
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


def test_the_history_names_fields_in_french_and_dates_in_local_time(staff_client):
    fact, _ = fact_store(key="user_job", value="Ingénieur")
    fact_update(fact=fact, actor=Actor.USER, ttl="2w", subjects=["travail", "paul"])
    fact.refresh_from_db()

    html = staff_client.get("/memory/facts/user_job/history/", **HTMX).content.decode()

    assert "expires_at" not in html and "expiration : <bdi>—</bdi>" in html
    assert timezone.localtime(fact.expires_at).strftime("%d/%m/%Y %H:%M") in html
    assert "sujets : <bdi>—</bdi> → <bdi>travail, paul</bdi>" in html
    assert "type : <bdi>—</bdi> → <bdi>Fait</bdi>" in html
    assert "Modifié par le propriétaire" in html
