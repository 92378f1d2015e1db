"""With SQLite's planner statistics, T1's fact lookups read a selective index.

Without statistics SQLite takes ``forgetting_id IS NULL`` (true of nearly every
fact) for a selective equality and reads every fact through that index, then
sorts them; the pre-hook runs these lookups on every message. `serve` refreshes
the statistics when it starts (retrieval_warm), and so does reindex.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import Fact, MemorySettings
from memory.services.retrieval.sources import t1_context
from memory.stores.sqlite import planner_statistics_refresh
from tests.memory.test_side_table_indexes import _plans

pytestmark = pytest.mark.django_db


def test_after_the_statistics_refresh_t1_reads_facts_by_importance_and_date_not_by_forgetting():
    old = timezone.now() - timedelta(days=30)
    Fact.objects.bulk_create(
        [
            Fact(key=f"fait_{i}", value=f"valeur {i}", importance=0.5, created_at=old)
            for i in range(300)
        ]
    )
    Fact.objects.create(key="fait_important", value="le code du portail", importance=0.9)

    assert planner_statistics_refresh()
    with CaptureQueriesContext(connection) as queries:
        ranked = t1_context("whatsapp", MemorySettings.load(), timezone.now()).ranked

    important = Fact.objects.get(key="fait_important")
    assert ranked.count((f"fact:{important.pk}", 0.9)) == 2  # recent and important
    for plan in _plans(queries, "core_memory"):
        assert "forgetting_id" not in plan, plan


def test_past_the_sample_size_t1_still_avoids_the_forgetting_index():
    """Far past ANALYSIS_LIMIT facts a sampled ANALYZE saw only the first rows of each
    index and rated every index alike ("28304 1001" at 30,000 facts), so T1 went back to
    reading every fact through forgetting_id and sorting them (7.6 ms at 100,000
    memories against 0.03 ms). The facts table is analysed whole."""
    from memory.stores.sqlite import ANALYSIS_LIMIT

    old = timezone.now() - timedelta(days=30)
    Fact.objects.bulk_create(
        [
            Fact(key=f"fait_{i}", value=f"valeur {i}", importance=0.6, created_at=old)
            for i in range(30 * ANALYSIS_LIMIT)
        ],
        batch_size=1000,
    )

    assert planner_statistics_refresh()
    with CaptureQueriesContext(connection) as queries:
        t1_context("whatsapp", MemorySettings.load(), timezone.now())

    plans = _plans(queries, "core_memory")
    assert plans
    for plan in plans:
        assert "forgetting_id" not in plan, plan


def test_warming_refreshes_the_planner_statistics():
    from memory.services.retrieval import retrieval_warm

    Fact.objects.create(key="fait", value="valeur")
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS sqlite_stat1")
    timings = retrieval_warm()
    assert "sqlite" in timings
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM sqlite_stat1 WHERE tbl = 'core_memory'")
        assert cursor.fetchone()[0] > 0


def test_the_hourly_task_refreshes_them_as_the_data_grows():
    from makilab.celery import app
    from memory.tasks import planner_statistics_refresh_task

    schedule = app.conf.beat_schedule["planner-statistics"]
    assert schedule["task"] == planner_statistics_refresh_task.name
    Fact.objects.bulk_create([Fact(key=f"fait_{i}", value="valeur") for i in range(50)])
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS sqlite_stat1")
    assert planner_statistics_refresh_task() is True
    with connection.cursor() as cursor:
        cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'core_memory' LIMIT 1")
        assert cursor.fetchone()[0].startswith("50")


def test_the_agents_summary_reads_its_items_by_index_not_by_scanning_the_owners_facts():
    """The self and goals summary runs on every message. With 30,000 owner facts and the
    statistics refreshed, it scanned core_memory and sorted it (13 and 17 ms at 100,000
    memories) though the agent has a handful of items: the kind+rank index serves it."""
    from memory.services.retrieval.block import agent_summary_lines

    old = timezone.now() - timedelta(days=30)
    Fact.objects.bulk_create(
        [
            Fact(key=f"fait_{i}", value=f"valeur {i}", importance=0.6, created_at=old)
            for i in range(30_000)
        ],
        batch_size=1000,
    )
    assert planner_statistics_refresh()
    with CaptureQueriesContext(connection) as queries:
        selves, goals = agent_summary_lines()

    assert selves == [] and goals == []
    plans = _plans(queries, "core_memory")
    # The summary is read with the other facts every retrieval reads (facts_view):
    # each of those reads is served by an index, in order, with no sort.
    assert len([p for p in plans if "core_memory_kind_rank (kind=?)" in p]) >= 2, plans
    for plan in plans:
        assert "USING INDEX" in plan and "TEMP B-TREE" not in plan, plan
