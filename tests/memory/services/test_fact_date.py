"""One date per fact: the retrieval's "when" filter reads the date the fact is shown with."""

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from memory.models import Fact, Summary
from memory.services.facts import fact_store
from memory.services.retrieval.sources import window_ids

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")


def _month(year, month):
    start = datetime(year, month, 1, tzinfo=PARIS)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=PARIS)
    return start, end


def test_the_time_source_filters_facts_on_the_date_they_are_shown_with():
    fact, _ = fact_store(key="train", value="Le train pour Lyon part à 7h")
    Fact.objects.filter(pk=fact.pk).update(
        created_at=datetime(2026, 1, 10, 9, tzinfo=PARIS),
        updated_at=datetime(2026, 3, 5, 9, tzinfo=PARIS),
    )
    fact.refresh_from_db()
    assert fact.date.month == 3  # shown as "le 5 mars"
    assert f"fact:{fact.pk}" in window_ids(*_month(2026, 3))
    assert f"fact:{fact.pk}" not in window_ids(*_month(2026, 1))


def test_the_time_source_dates_a_summary_by_the_end_of_its_period():
    summary = Summary.objects.create(
        channel="whatsapp",
        content="Résumé de février",
        period_start=datetime(2026, 2, 1, tzinfo=PARIS),
        period_end=datetime(2026, 2, 27, tzinfo=PARIS),
        created_at=datetime(2026, 3, 20, tzinfo=PARIS),
    )
    assert f"summary:{summary.pk}" in window_ids(*_month(2026, 2))
    assert f"summary:{summary.pk}" not in window_ids(*_month(2026, 3))
