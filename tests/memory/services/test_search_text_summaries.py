"""The owner's text search finds the summaries by their words, as it finds messages and facts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone

from memory.models import Fact, Forgetting, Message, Summary
from memory.services.search import SearchFilters, memory_search

pytestmark = pytest.mark.django_db

MARCH = datetime(2027, 3, 31, 22, 0, tzinfo=UTC)


@pytest.fixture
def march():
    return Summary.objects.create(
        channel="whatsapp",
        content=(
            "Résumé de mars. Le propriétaire a repris la course le dimanche. Le garagiste de "
            "la rue Solférino a changé les plaquettes de la Clio. Il apprend le C++ le soir."
        ),
        period_end=MARCH,
    )


def test_a_summary_is_found_by_its_words_with_the_excerpt_around_them(march):
    """Before, text search read messages_fts and facts_fts only: the garage of « rue
    Solférino », told in March's summary alone, was not found by its name."""
    hits = memory_search(query="garagiste Solferino", mode="text")

    assert [(h.kind, h.id) for h in hits] == [("summary", str(march.pk))]
    assert "Solférino" in hits[0].excerpt
    assert hits[0].source == "summaries_fts"


def test_the_three_kinds_interleave_by_rank(march):
    message = Message.objects.create(channel="whatsapp", role="user", content="Les plaquettes ?")
    fact = Fact.objects.create(key="voiture", value="Les plaquettes de la Clio sont neuves")

    kinds = [(h.kind, h.id) for h in memory_search(query="plaquettes", mode="text")]

    assert kinds == [
        ("message", str(message.pk)),
        ("fact", str(fact.pk)),
        ("summary", str(march.pk)),
    ]


def test_the_channel_and_dates_filter_the_summaries_by_their_own_date(march):
    def found(**filters) -> bool:
        hits = memory_search(query="Solferino", mode="text", filters=SearchFilters(**filters))
        return any(h.kind == "summary" for h in hits)

    assert found(channel="whatsapp")
    assert not found(channel="mission_control")
    assert found(since=datetime(2027, 3, 1, tzinfo=UTC), until=datetime(2027, 4, 1, tzinfo=UTC))
    assert not found(since=datetime(2027, 4, 1, tzinfo=UTC))
    assert not found(until=datetime(2027, 3, 1, tzinfo=UTC))
    assert not found(memory_type="preference")  # only facts have a type


def test_a_symbol_word_must_be_in_the_summary_as_written(march):
    Summary.objects.create(channel="whatsapp", content="C'est le mois où rien ne s'est passé.")

    hits = memory_search(query="C++", mode="text")

    assert [(h.kind, h.id) for h in hits] == [("summary", str(march.pk))]


def test_a_forgotten_summary_is_not_found(march):
    forgetting = Forgetting.objects.create(topic="garage", purge_after=timezone.now())
    Summary.all_objects.filter(pk=march.pk).update(forgetting=forgetting)

    assert memory_search(query="Solferino", mode="text") == []
