"""Keyword search people can use: natural questions find rows, all words first, filters."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from memory.models import Fact, Message
from memory.services.facts import fact_store
from memory.services.search import SearchFilters, memory_search

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture
def memories():
    Message.objects.create(
        channel="whatsapp", role="user", content="Le kiné a dit de reprendre la natation doucement"
    )
    Message.objects.create(
        channel="whatsapp", role="user", content="Rendez-vous chez le kiné jeudi"
    )
    Message.objects.create(
        channel="dashboard", role="user", content="La piscine municipale ferme en août"
    )
    fact_store(
        key="epaule",
        value="Mickael s'est blessé à l'épaule en escalade",
        memory_type="event",
        subjects=["sante", "escalade"],
        channel="whatsapp",
    )
    fact_store(key="plat", value="Les lentilles au curry", memory_type="preference")


def _texts(hits):
    return [h.excerpt for h in hits]


def test_a_natural_question_finds_what_an_and_over_every_word_missed(memories):
    hits = memory_search(query="qu'est-ce que le kiné m'a dit pour la natation ?", mode="text")
    assert hits, "a natural question must find the message about the kiné and swimming"
    assert "natation" in hits[0].excerpt  # the row holding every meaningful word comes first


def test_rows_with_every_word_come_before_rows_with_some(memories):
    hits = memory_search(query="kiné natation", mode="text")
    assert _texts(hits)[0].startswith("Le kiné a dit de reprendre la natation")
    assert any("jeudi" in text for text in _texts(hits)[1:])  # only "kiné": after


def test_facts_are_ranked_by_their_fts_index_and_forgotten_ones_never_crowd_in(memories):
    from memory.services.facts import fact_forget

    for i in range(30):
        fact = fact_store(key=f"escalade_{i}", value=f"Séance d'escalade numéro {i}")[0]
        fact_forget(fact=fact, actor="user")
    hits = memory_search(query="escalade", mode="text", limit=3)
    assert [h.key for h in hits if h.kind == "fact"] == ["epaule"]


@pytest.mark.parametrize(
    ("filters", "expected_kinds"),
    [
        (SearchFilters(channel="dashboard"), {"message"}),
        (SearchFilters(memory_type="event"), {"fact"}),
        (SearchFilters(subjects=("escalade",)), {"fact"}),
    ],
)
def test_filters_narrow_the_hits(memories, filters, expected_kinds):
    hits = memory_search(query="piscine escalade", mode="text", filters=filters)
    assert hits and {h.kind for h in hits} == expected_kinds
    if filters.channel:
        assert {h.channel for h in hits} == {"dashboard"}


def test_a_date_range_keeps_the_rows_of_the_period(memories):
    old = datetime(2025, 1, 10, 12, tzinfo=PARIS)
    Message.objects.filter(content__startswith="Rendez-vous").update(created_at=old)
    Fact.objects.filter(key="epaule").update(updated_at=old)
    january = SearchFilters(
        since=datetime(2025, 1, 1, tzinfo=PARIS), until=datetime(2025, 2, 1, tzinfo=PARIS)
    )
    hits = memory_search(query="kiné escalade", mode="text", filters=january)
    assert sorted(h.kind for h in hits) == ["fact", "message"]
    assert all(h.date.year == 2025 for h in hits)
