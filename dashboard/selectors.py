"""Reads for /costs: LLM spend per day and per purpose, the auto-retrieval overhead apart.

The overhead is known exactly in tokens (LlmUsage.retrieval_tokens, the input
tokens the injected block added). Its cost is those tokens at the model's
input price, from the agent's price table (``agent.usage.usage_cost``); without it
it is estimated from each call's own cost, as the retrieval tokens' share of
the call's tokens, and labelled as an estimate.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Sum
from django.utils import timezone

from agent.models import Purpose, UsageDay

COSTS_DAYS = 30
CHART_WIDTH = 720
CHART_HEIGHT = 180
CHART_PADDING = 24
# Colours of the chart, per purpose (and the overhead overlay).
PURPOSE_COLOURS = {
    Purpose.CHAT: "#4f6df5",
    Purpose.EXTRACTION: "#2f9e77",
    Purpose.COMPACTION: "#d9822b",
    Purpose.DEDUP: "#8e6cc9",
    Purpose.DIGEST: "#c2497b",
    Purpose.FORGET: "#a38b2b",
}
OVERHEAD_COLOUR = "#111827"


def _input_pricer():
    """The agent's price table as f(model, tokens) -> Decimal, when the agent has one."""
    try:
        from agent.usage import usage_cost
    except ImportError:
        return None

    def input_cost(*, model: str, tokens: int) -> Decimal:
        return usage_cost(model=model, input_tokens=tokens, output_tokens=0)

    return input_cost


def _overhead_cost(row: dict[str, Any], pricer) -> Decimal:
    tokens = row["retrieval_tokens"] or 0
    if not tokens:
        return Decimal("0")
    if pricer is not None:
        return Decimal(str(pricer(model=row["model"], tokens=tokens)))
    all_tokens = (row["input_tokens"] or 0) + (row["output_tokens"] or 0)
    if not all_tokens:
        return Decimal("0")
    return (row["cost_usd"] or Decimal("0")) * tokens / all_tokens


def costs_summary_get(*, days: int = COSTS_DAYS, today: date | None = None) -> dict[str, Any]:
    """Everything /costs shows, for the last ``days`` days (today included, local time)."""
    today = today or timezone.localdate()
    start = today - timedelta(days=days - 1)
    # The daily totals (agent.models.UsageDay), not the raw calls: /costs reads at
    # most days × purposes × models rows however many calls there were.
    rows = (
        UsageDay.objects.filter(day__gte=start, day__lte=today)
        .values("day", "purpose", "model")
        .annotate(
            calls=Sum("calls"),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            retrieval_tokens=Sum("retrieval_tokens"),
            cost_usd=Sum("cost_usd"),
            estimated_calls=Sum("estimated_calls"),
        )
        .order_by("day", "purpose", "model")
    )
    pricer = _input_pricer()
    zero = Decimal("0")
    daily: dict[date, dict[str, Any]] = {}
    purposes: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": zero}
    )
    totals = {
        "cost": zero,
        "retrieval_tokens": 0,
        "overhead_cost": zero,
        "input_tokens": 0,
        "estimated_calls": 0,  # interrupted answers: their output tokens are estimated
    }
    for row in rows:
        day = daily.setdefault(
            row["day"],
            {
                "day": row["day"],
                "by_purpose": defaultdict(lambda: zero),
                "cost": zero,
                "retrieval_tokens": 0,
                "overhead_cost": zero,
                "calls": 0,
            },
        )
        cost = row["cost_usd"] or zero
        overhead = _overhead_cost(row, pricer)
        day["by_purpose"][row["purpose"]] += cost
        day["cost"] += cost
        day["calls"] += row["calls"]
        day["retrieval_tokens"] += row["retrieval_tokens"] or 0
        day["overhead_cost"] += overhead
        purpose = purposes[row["purpose"]]
        purpose["calls"] += row["calls"]
        purpose["input_tokens"] += row["input_tokens"] or 0
        purpose["output_tokens"] += row["output_tokens"] or 0
        purpose["cost"] += cost
        totals["cost"] += cost
        totals["retrieval_tokens"] += row["retrieval_tokens"] or 0
        totals["overhead_cost"] += overhead
        totals["input_tokens"] += row["input_tokens"] or 0
        totals["estimated_calls"] += row["estimated_calls"] or 0

    labels = dict(Purpose.choices)
    purpose_rows = [
        {
            "purpose": name,
            "label": labels.get(name, name),
            "colour": PURPOSE_COLOURS.get(name, "#999"),
            **values,
        }
        for name, values in sorted(purposes.items(), key=lambda item: -item[1]["cost"])
    ]
    day_rows = [
        {
            **day,
            "cells": [day["by_purpose"].get(p["purpose"], zero) for p in purpose_rows],
        }
        for day in sorted(daily.values(), key=lambda d: d["day"], reverse=True)
    ]
    share = (
        totals["retrieval_tokens"] / totals["input_tokens"] * 100 if totals["input_tokens"] else 0
    )
    return {
        "days": days,
        "start": start,
        "today": today,
        "purpose_rows": purpose_rows,
        "day_rows": day_rows,
        "totals": totals,
        "overhead_share_percent": share,
        "overhead_estimated": pricer is None,
        "chart": _chart(start, days, daily, purpose_rows),
    }


def _dollars(value: float) -> str:
    """An amount as the page writes it (floatformat:4 in French): « 0,0840 » (QA)."""
    return f"{value:.4f}".replace(".", ",")


def _chart(start: date, days: int, daily: dict, purpose_rows: list[dict]) -> dict[str, Any]:
    """Stacked bars per day (one colour per purpose) with the overhead drawn over them."""
    inner_height = CHART_HEIGHT - 2 * CHART_PADDING
    slot = (CHART_WIDTH - 2 * CHART_PADDING) / days
    bar_width = max(2.0, slot * 0.7)
    highest = max((float(day["cost"]) for day in daily.values()), default=0.0)
    bars = []
    for index in range(days):
        day = start + timedelta(days=index)
        data = daily.get(day)
        x = CHART_PADDING + index * slot + (slot - bar_width) / 2
        segments = []
        overhead = None
        if data and highest > 0:
            bottom = CHART_PADDING + inner_height
            for purpose in purpose_rows:
                value = float(data["by_purpose"].get(purpose["purpose"], 0))
                height = value / highest * inner_height
                if height <= 0:
                    continue
                bottom -= height
                segments.append(
                    {
                        "y": round(bottom, 2),
                        "height": round(height, 2),
                        "colour": purpose["colour"],
                        "title": f"{day:%d/%m} {purpose['label']} : {_dollars(value)} $",
                    }
                )
            overhead_height = float(data["overhead_cost"]) / highest * inner_height
            if overhead_height > 0:
                overhead = {
                    "y": round(CHART_PADDING + inner_height - overhead_height, 2),
                    "height": round(overhead_height, 2),
                    "title": (
                        f"{day:%d/%m} surcoût auto-retrieval : "
                        f"{_dollars(float(data['overhead_cost']))} $"
                    ),
                }
        bars.append(
            {
                "x": round(x, 2),
                "width": round(bar_width, 2),
                "segments": segments,
                "overhead": overhead,
                "label": f"{day:%d/%m}",
                "show_label": index % 5 == 0,
            }
        )
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "baseline": CHART_HEIGHT - CHART_PADDING,
        "left": CHART_PADDING,
        "right": CHART_WIDTH - CHART_PADDING,
        "max_cost": highest,
        "bars": bars,
        "overhead_colour": OVERHEAD_COLOUR,
        # No call at all (QA: calls priced 0, a model missing from the price table, were
        # said absent while « Par usage » listed them).
        "empty": not daily,
    }
