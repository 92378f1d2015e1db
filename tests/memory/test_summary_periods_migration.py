"""Migration 0031 gives a summary dated backwards (the compaction by its messages' ids) the
period between its two dates, and sends it back to indexing (its point carries the date)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("memory", "0030_fact_channel_rule")
AFTER = ("memory", "0031_summary_periods_in_order")


def _migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def _summary_model(target):
    return (
        MigrationExecutor(connection)
        .loader.project_state(target)
        .apps.get_model("memory", "Summary")
    )


def test_a_period_given_backwards_is_put_in_order_and_indexed_again():
    try:
        _migrate([BEFORE])
        now = timezone.now()
        Summary = _summary_model(BEFORE)
        fields = {"channel": "sms", "message_count": 2, "index_state": "indexed", "version": 3}
        backwards = Summary.objects.create(
            content="à l'envers", period_start=now, period_end=now - timedelta(days=2), **fields
        )
        in_order = Summary.objects.create(
            content="dans l'ordre", period_start=now - timedelta(days=2), period_end=now, **fields
        )

        _migrate([AFTER])
        Summary = _summary_model(AFTER)
        fixed = Summary.objects.get(pk=backwards.pk)
        assert (fixed.period_start, fixed.period_end) == (now - timedelta(days=2), now)
        assert (fixed.index_state, fixed.version) == ("pending", 4)
        kept = Summary.objects.get(pk=in_order.pk)
        assert (kept.index_state, kept.version) == ("indexed", 3)
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
