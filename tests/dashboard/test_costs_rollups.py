"""/costs reads the daily totals: the raw calls can be purged, the spend history stays."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent.models import LlmUsage, UsageDay
from agent.usage import usage_record
from memory.models import MemoryRetrieval, MemorySettings
from memory.services.retention import logs_purge

pytestmark = pytest.mark.django_db

MODEL = "claude-sonnet-4-5"


def _calls():
    now = timezone.now()
    for days_ago, purpose, tokens in [
        (0, "chat", 1000),
        (0, "chat", 3000),
        (0, "extraction", 500),
        (3, "chat", 2000),
        (20, "compaction", 8000),
        (200, "chat", 9000),
    ]:
        usage_record(
            created_at=now - timedelta(days=days_ago),
            model=MODEL,
            purpose=purpose,
            input_tokens=tokens,
            output_tokens=tokens // 10,
            retrieval_tokens=tokens // 4,
        )


def _summary(staff_client):
    context = staff_client.get("/costs/").context
    return context["totals"], [(r["purpose"], r["calls"]) for r in context["purpose_rows"]]


def test_each_call_adds_to_its_day_and_costs_reads_only_the_daily_totals(staff_client):
    _calls()
    today = UsageDay.objects.get(day=timezone.localdate(), purpose="chat")
    assert (today.calls, today.input_tokens, today.output_tokens) == (2, 4000, 400)
    assert today.cost_usd == sum(
        u.cost_usd for u in LlmUsage.objects.filter(purpose="chat", created_at__date=today.day)
    )
    with CaptureQueriesContext(connection) as queries:
        staff_client.get("/costs/")
    tables = {t for q in queries for t in re.findall(r'FROM "(\w+)"', q["sql"])}
    assert "llm_usage_daily" in tables
    assert "llm_usage" not in tables  # however many calls, /costs never scans them


def test_purging_old_calls_and_retrieval_logs_leaves_costs_unchanged(staff_client, settings):
    settings.MAKILAB_LLM_USAGE_RETENTION_DAYS = 2
    settings.MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS = 10
    # The channel's last turns stay whatever their age (the next retrieval reads them):
    # one turn, today's, so the two rows past the retention go.
    MemorySettings.objects.filter(pk=MemorySettings.load().pk).update(reinjection_turns=1)
    _calls()
    now = timezone.now()
    for days_ago in (0, 5, 11, 40):
        MemoryRetrieval.objects.create(
            created_at=now - timedelta(days=days_ago), channel="whatsapp", message_preview="q"
        )
    before = _summary(staff_client)
    counts = logs_purge()
    assert counts == {
        "retrievals": 2,
        "llm_usage": 3,
        "message_recordings": 0,
        "forget_previews": 0,
    }
    assert LlmUsage.objects.count() == 3  # today's calls
    assert sorted((now - r.created_at).days for r in MemoryRetrieval.objects.all()) == [0, 5]
    assert _summary(staff_client) == before
    assert logs_purge() == {
        "retrievals": 0,
        "llm_usage": 0,
        "message_recordings": 0,
        "forget_previews": 0,
    }  # twice: nothing more


def test_the_migration_builds_the_daily_totals_of_earlier_calls():
    from importlib import import_module

    migration = import_module("agent.migrations.0002_usage_daily")
    _calls()
    expected = sorted(UsageDay.objects.values_list("day", "purpose", "calls", "input_tokens"))
    UsageDay.objects.all().delete()
    migration.usage_days_fill(apps, None)
    assert (
        sorted(UsageDay.objects.values_list("day", "purpose", "calls", "input_tokens")) == expected
    )
