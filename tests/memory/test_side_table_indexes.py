"""The per-message checks on the side tables read an index, not the whole table.

At 10× today's history the compaction check (a channel's uncompacted messages,
on every reply) and the check of a channel's recent injections (its last
retrieval log rows, on every message) scanned and sorted every row of the
channel. SQLite's query plan of the exact SQL they run says which index serves
them; a plan that sorts in a temporary B-tree or scans the table fails.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent.compaction import compaction_job_enqueue
from memory.services.retrieval.selection import recently_injected

pytestmark = pytest.mark.django_db


def _plans(queries, table: str) -> list[str]:
    plans = []
    with connection.cursor() as cursor:
        for query in queries:
            if f'FROM "{table}"' not in query["sql"]:
                continue
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            plans.append(" | ".join(str(row[-1]) for row in cursor.fetchall()))
    assert plans, f"no query on {table}"
    return plans


def test_the_compaction_check_counts_through_the_uncompacted_index():
    # Queries are captured as SQL with their parameters inlined (sqlite's last_executed_query).
    with CaptureQueriesContext(connection) as queries:
        compaction_job_enqueue(channel="whatsapp")
    for plan in _plans(queries, "messages"):
        assert "messages_uncompacted" in plan, plan
        assert "TEMP B-TREE" not in plan, plan


def test_the_recent_injections_check_reads_the_channel_log_index_without_sorting():
    with CaptureQueriesContext(connection) as queries:
        recently_injected("whatsapp", 3)
    for plan in _plans(queries, "memory_retrievals"):
        assert "retrievals_channel_time" in plan, plan
        assert "TEMP B-TREE" not in plan, plan


def test_the_channel_summaries_read_the_channel_time_index_without_sorting():
    """T1 reads a channel's last summaries on every message: through (channel, created_at),
    not the channel's rows sorted in a temporary B-tree (0.25 ms at 2,000 summaries, on the
    pre-hook's critical path)."""
    from memory.selectors import channel_summaries, channel_summary_latest

    with CaptureQueriesContext(connection) as queries:
        list(channel_summaries(channel="whatsapp").values_list("id")[:2])
        channel_summary_latest(channel="whatsapp")
    for plan in _plans(queries, "memory_summary"):
        assert "summaries_channel_time" in plan, plan
        assert "TEMP B-TREE" not in plan, plan
