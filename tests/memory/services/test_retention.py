"""The daily purge of the logs (memory.services.retention.logs_purge)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent.models import LlmUsage
from memory.models import MemoryRetrieval, MemorySettings
from memory.services.retention import logs_purge
from memory.services.retrieval.selection import recently_injected

pytestmark = pytest.mark.django_db


def _logged(channel: str, days_ago: float, fact_id: int) -> MemoryRetrieval:
    return MemoryRetrieval.objects.create(
        created_at=timezone.now() - timedelta(days=days_ago),
        channel=channel,
        message_preview="Tu te souviens ?",
        memories=[{"id": f"fact:{fact_id}", "kind": "fact", "sources": ["semantic"], "text": "…"}],
    )


def test_the_purge_keeps_the_last_turns_the_next_retrieval_of_a_quiet_channel_reads(settings):
    """recently_injected reads a channel's last reinjection_turns log rows whatever their
    age (as the LLM's history is the last messages whatever their age): a channel quiet
    for longer than the retention keeps them, and only the rows past them go."""
    settings.MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS = 1
    turns = MemorySettings.load().reinjection_turns
    for i in range(turns + 2):  # whatsapp, quiet for days: its last turns are old
        _logged("whatsapp", days_ago=3 + i, fact_id=i)
    _logged("mission_control", days_ago=5, fact_id=100)
    before = recently_injected("whatsapp", turns)

    counts = logs_purge()

    assert counts["retrievals"] == 2
    assert recently_injected("whatsapp", turns) == before == {f"fact:{i}" for i in range(turns)}
    assert recently_injected("mission_control", turns) == {"fact:100"}
    assert logs_purge()["retrievals"] == 0


@pytest.mark.parametrize(
    "name", ["MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS", "MAKILAB_LLM_USAGE_RETENTION_DAYS"]
)
def test_a_retention_longer_than_the_calendar_purges_nothing(settings, name):
    """now - timedelta(days=1_000_000) is before year 1 (OverflowError): nothing is that old."""
    setattr(settings, name, 1_000_000)
    MemorySettings.objects.filter(pk=MemorySettings.load().pk).update(reinjection_turns=0)
    _logged("whatsapp", days_ago=400, fact_id=1)
    LlmUsage.objects.create(
        created_at=timezone.now() - timedelta(days=400), model="claude", purpose="chat"
    )

    counts = logs_purge()

    kept = {
        "MAKILAB_RETRIEVAL_LOG_RETENTION_DAYS": MemoryRetrieval,
        "MAKILAB_LLM_USAGE_RETENTION_DAYS": LlmUsage,
    }
    assert kept[name].objects.count() == 1, counts


def test_a_forget_dry_run_nobody_agreed_to_is_dropped_by_the_daily_purge():
    """A dry run keeps the ids it showed (agent.ForgetPreview) for an hour: one never
    followed by an agreement nor by another dry run must not stay for good."""
    from agent.models import ForgetPreview

    now = timezone.now()
    ForgetPreview.objects.create(
        channel="whatsapp", terms_digest="a" * 64, ids=["fact:1"], created_at=now
    )
    ForgetPreview.objects.create(
        channel="whatsapp",
        terms_digest="b" * 64,
        ids=["fact:2"],
        created_at=now - timedelta(hours=2),
    )

    logs_purge()

    assert list(ForgetPreview.objects.values_list("terms_digest", flat=True)) == ["a" * 64]
