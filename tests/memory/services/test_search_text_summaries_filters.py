"""Text search, summaries tier: the channel and date filters are applied in Python after
ranking only (limit + excluded) * 4 rows of summaries_fts (search_text._summary_text_hits),
so a summary of the asked channel (or period) that matches the words is not found when more
than that many summaries of other channels rank above it. The messages' tier filters in
the SQL (fts_search joins messages), and so does never miss one."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.models import Message, Summary
from memory.services.search import SearchFilters, memory_search

pytestmark = pytest.mark.django_db


def test_the_channel_filter_finds_the_channels_summary_behind_other_channels(db):
    for i in range(21):  # short, word-dense: they rank first
        Summary.objects.create(channel="whatsapp", content=f"Solférino, rue Solférino ({i}).")
    wanted = Summary.objects.create(
        channel="mission_control",
        content="Résumé de mars. "
        + "Le propriétaire a couru le dimanche. " * 20
        + "Le garage est rue Solférino.",
    )

    hits = memory_search(
        query="Solferino", mode="text", limit=5, filters=SearchFilters(channel="mission_control")
    )

    assert [(h.kind, h.id) for h in hits] == [("summary", str(wanted.pk))]


def test_the_messages_tier_with_the_same_shape_is_found(db):
    """The same shape with messages: found (the filter is in the SQL)."""
    for i in range(21):
        Message.objects.create(
            channel="whatsapp", role="user", content=f"Solférino, rue Solférino ({i})."
        )
    wanted = Message.objects.create(
        channel="mission_control",
        role="user",
        content="Le propriétaire a couru le dimanche. " * 20 + "Le garage est rue Solférino.",
    )

    hits = memory_search(
        query="Solferino", mode="text", limit=5, filters=SearchFilters(channel="mission_control")
    )

    assert [(h.kind, h.id) for h in hits] == [("message", str(wanted.pk))]


def test_the_date_filter_finds_the_periods_summary_behind_other_periods(db):
    for i in range(21):
        Summary.objects.create(
            channel="whatsapp",
            content=f"Solférino, rue Solférino ({i}).",
            period_end=datetime(2027, 5, 31, tzinfo=UTC),
        )
    march = Summary.objects.create(
        channel="whatsapp",
        content="Résumé de mars. "
        + "Le propriétaire a couru le dimanche. " * 20
        + "Le garage est rue Solférino.",
        period_end=datetime(2027, 3, 31, tzinfo=UTC),
    )

    hits = memory_search(
        query="Solferino",
        mode="text",
        limit=5,
        filters=SearchFilters(
            since=datetime(2027, 3, 1, tzinfo=UTC), until=datetime(2027, 4, 1, tzinfo=UTC)
        ),
    )

    assert [(h.kind, h.id) for h in hits] == [("summary", str(march.pk))]


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"channel": "mission_control"}, {"channel": "mission_control"}),
        ({"memory_type": "preference"}, {"memory_type": "preference"}),
        ({"subjects": ("garage",)}, {"subjects": ["garage"]}),
        (
            {"since": datetime(2027, 3, 1, tzinfo=UTC)},
            {"updated_at": datetime(2027, 3, 9, tzinfo=UTC)},
        ),
    ],
)
def test_the_facts_tier_finds_the_filtered_fact_behind_others(db, filters, field):
    """The same weakness in the facts' tier (the review: older than the summaries' one):
    filtered after a bounded ranking, a fact that passes the filters but ranks below the
    others was never returned."""
    from memory.models import Fact

    for i in range(25):  # short, word-dense: they rank first; none passes the filters
        Fact.objects.create(
            key=f"solferino_{i}",
            value="Solférino, rue Solférino",
            channel="whatsapp",
            memory_type="fact",
            updated_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
    wanted = Fact.objects.create(
        key="garage_voiture",
        value="Le garage de la voiture, celui qui a changé les plaquettes, est rue Solférino",
        **{"channel": "whatsapp", "memory_type": "fact"} | field,
    )
    Fact.objects.filter(pk=wanted.pk).update(updated_at=field.get("updated_at", wanted.updated_at))
    Fact.objects.exclude(pk=wanted.pk).update(updated_at=datetime(2026, 1, 1, tzinfo=UTC))

    hits = memory_search(query="Solferino", mode="text", limit=5, filters=SearchFilters(**filters))

    assert [(h.kind, h.id) for h in hits] == [("fact", str(wanted.pk))]
