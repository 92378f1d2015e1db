"""/costs: spend per day and per purpose, the auto-retrieval overhead apart, an SVG chart."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from agent.models import LlmUsage
from agent.usage import usage_cost, usage_record

pytestmark = pytest.mark.django_db

MODEL = "claude-sonnet-4-5"


def usage(
    days_ago: int, purpose: str, input_tokens: int, output_tokens: int, retrieval_tokens: int = 0
):
    return usage_record(
        created_at=timezone.now() - timedelta(days=days_ago),
        model=MODEL,
        purpose=purpose,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        retrieval_tokens=retrieval_tokens,
    )


def test_costs_per_purpose_and_the_retrieval_overhead_apart(staff_client):
    usage(0, "chat", 10_000, 1_000, retrieval_tokens=2_000)
    usage(0, "extraction", 3_000, 500)
    usage(2, "chat", 20_000, 2_000, retrieval_tokens=4_000)
    usage(2, "compaction", 8_000, 1_000)
    usage(40, "chat", 1_000_000, 0)  # outside the 30 days
    response = staff_client.get("/costs/")
    assert response.status_code == 200
    context = response.context
    total = sum(
        u.cost_usd
        for u in LlmUsage.objects.filter(created_at__gte=timezone.now() - timedelta(days=29))
    )
    assert context["totals"]["cost"] == total
    assert context["totals"]["retrieval_tokens"] == 6_000
    assert context["totals"]["overhead_cost"] == usage_cost(
        model=MODEL, input_tokens=6_000, output_tokens=0
    )
    assert context["overhead_estimated"] is False
    purposes = {row["purpose"]: row for row in context["purpose_rows"]}
    assert set(purposes) == {"chat", "extraction", "compaction"}
    assert purposes["chat"]["calls"] == 2
    assert purposes["chat"]["input_tokens"] == 30_000
    html = response.content.decode()
    for label in ("Conversation", "Extraction de faits", "Compaction", "Surcoût auto-retrieval"):
        assert label in html
    assert "<svg" in html and "<rect" in html
    assert 'class="overhead"' in html
    assert f"{context['totals']['overhead_cost']:.4f}".replace(".", ",") in html
    assert len(context["day_rows"]) == 2


def test_the_chart_bars_scale_to_the_most_expensive_day(staff_client):
    usage(0, "chat", 10_000, 0)
    usage(1, "chat", 5_000, 0)
    chart = staff_client.get("/costs/").context["chart"]
    heights = [
        sum(s["height"] for s in bar["segments"]) for bar in chart["bars"] if bar["segments"]
    ]
    assert len(chart["bars"]) == 30
    assert max(heights) == pytest.approx(2 * min(heights), rel=0.01)


def test_no_usage_says_so(staff_client):
    html = staff_client.get("/costs/").content.decode()
    assert "Aucun appel LLM sur la période." in html
    assert "<svg" not in html


def test_costs_is_in_the_navigation_and_marked_current(staff_client):
    html = staff_client.get("/costs/").content.decode()
    assert '<a href="/costs/" aria-current="page">Coûts</a>' in html
    assert Decimal("0") == staff_client.get("/costs/").context["totals"]["cost"]
