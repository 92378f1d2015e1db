"""What memory_export writes of a date, memory_import reads: a fact whose expiry the admin
let through before it checked the years (9999), or a moment a writer stored at the edge of
the years in another offset, no longer makes the export a file the import refuses."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import Actor, Fact, Message, RevisionReason
from memory.services.facts import fact_store, fact_update
from memory.services.search import DATE_EDGES
from tests.memory.services.test_portability import _wipe

pytestmark = pytest.mark.django_db


def _round_trip(tmp_path) -> None:
    """memory_export, a fresh memory, memory_import of the file."""
    path = tmp_path / "memoire.jsonl"
    call_command("memory_export", str(path), stdout=StringIO(), stderr=StringIO())
    _wipe()
    call_command("memory_import", str(path), stdout=StringIO(), stderr=StringIO())


def _fact_state(key: str) -> tuple:
    fact = Fact.objects.get(key=key)
    revisions = fact.revisions.order_by("created_at", "id")
    return (
        fact.value,
        fact.memory_type,
        fact.importance,
        tuple(fact.subjects),
        fact.created_at,
        fact.updated_at,
        [(r.actor, r.reason, r.new_value, json.dumps(r.changes), r.created_at) for r in revisions],
    )


@pytest.mark.parametrize(
    "expires_at",
    [
        pytest.param(datetime(9999, 12, 31, 22, 59, tzinfo=UTC), id="31-12-9999-23h59-paris"),
        pytest.param(datetime(9999, 6, 1, tzinfo=UTC), id="june-9999"),
        pytest.param(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), id="last-moment"),
    ],
)
def test_a_fact_expiring_in_year_9999_survives_the_round_trip(tmp_path, expires_at):
    fact, _ = fact_store(key="velo", value="Le vélo est gris", subjects=["velo"])
    # As the admin saved it before its form checked the years: through the service.
    fact_update(fact=fact, actor=Actor.ADMIN, reason=RevisionReason.EDITED, expires_at=expires_at)
    fact_store(key="potager", value="Le potager est au fond du jardin", ttl="7d")
    before = {key: _fact_state(key) for key in ("velo", "potager")}
    potager_expiry = Fact.objects.get(key="potager").expires_at

    _round_trip(tmp_path)

    assert {key: _fact_state(key) for key in ("velo", "potager")} == before
    velo = Fact.objects.get(key="velo")
    # Still "never" in practice: the last moment of the years the memory accepts.
    assert velo.expires_at == DATE_EDGES[1]
    assert not velo.is_expired
    assert Fact.objects.get(key="potager").expires_at == potager_expiry  # in range: unchanged


def test_moments_a_writer_stored_at_the_edges_of_the_years_survive_the_round_trip(tmp_path):
    """In range in their own offset, out of it in UTC, the export's time zone."""
    written = datetime(1000, 1, 1, tzinfo=UTC) - timedelta(hours=5)  # 1000-01-01T00:00+05:00
    Message.objects.create(channel="whatsapp", role="user", content="Salut", created_at=written)
    fact_store(key="velo", value="Le vélo est gris")
    # 9998-12-31T23:30-05:00, the latest expiry the API accepts from that offset.
    Fact.objects.filter(key="velo").update(expires_at=datetime(9999, 1, 1, 4, 30, tzinfo=UTC))

    _round_trip(tmp_path)

    assert Message.objects.get(content="Salut").created_at == DATE_EDGES[0]
    assert Fact.objects.get(key="velo").expires_at == DATE_EDGES[1]
