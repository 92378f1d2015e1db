"""What LLM calls cost: one price table, one cost function, one row per call.

Prices are USD per million tokens, from Anthropic's pricing page
(platform.claude.com/docs/en/about-claude/pricing). A model id matches the
longest key it starts with, so dated ids ("claude-sonnet-4-5-20250929") and
aliases share a price. A model missing from the table falls back to its
family's current price ("sonnet", "opus", "haiku", ...) with a warning in the
log; an unknown family costs 0 (logged), never a crash.

Not modelled: prompt caching (we send no cache_control), the Batch API, and the
long-prompt price bands some models have.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agent.models import LlmUsage, UsageDay

logger = logging.getLogger(__name__)

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    input_per_mtok: Decimal
    output_per_mtok: Decimal


def _price(input_usd: str, output_usd: str) -> Price:
    return Price(Decimal(input_usd), Decimal(output_usd))


# Model id (prefix) -> price. Keep the whole table here: /costs reads nothing else.
MODEL_PRICES: dict[str, Price] = {
    "claude-fable-5": _price("10", "50"),  # Fable 5, 5.1
    "claude-mythos-5": _price("10", "50"),  # Mythos 5, 5.1
    "claude-opus-5-5": _price("4", "20"),
    "claude-opus-5": _price("5", "25"),
    "claude-opus-4-8": _price("5", "25"),
    "claude-opus-4-7": _price("5", "25"),
    "claude-opus-4-6": _price("5", "25"),
    "claude-opus-4-5": _price("5", "25"),
    "claude-opus-4-1": _price("15", "75"),
    "claude-opus-4": _price("15", "75"),
    "claude-sonnet-5": _price("2", "10"),  # Sonnet 5, 5.5
    "claude-sonnet-4": _price("3", "15"),  # Sonnet 4, 4.5, 4.6
    "claude-3-7-sonnet": _price("3", "15"),
    "claude-3-5-sonnet": _price("3", "15"),
    # Haiku 5.5: prompts up to 100K tokens (longer ones cost 5x: not modelled).
    "claude-haiku-5-5": _price("0.10", "0.50"),
    "claude-haiku-4-5": _price("1", "5"),
    "claude-3-5-haiku": _price("0.80", "4"),
    "claude-3-haiku": _price("0.25", "1.25"),
}
# The price of a model not in the table, by the family its id names.
FAMILY_FALLBACK: dict[str, str] = {
    "fable": "claude-fable-5",
    "mythos": "claude-mythos-5",
    "opus": "claude-opus-5",
    "sonnet": "claude-sonnet-5",
    "haiku": "claude-haiku-4-5",
}
ZERO_PRICE = Price(Decimal(0), Decimal(0))

_warned: set[str] = set()


def model_price(model: str) -> Price:
    """The price of ``model``: longest matching prefix, else its family's, else zero."""
    name = model.strip().lower()
    matches = [key for key in MODEL_PRICES if name.startswith(key)]
    if matches:
        return MODEL_PRICES[max(matches, key=len)]
    for family, key in FAMILY_FALLBACK.items():
        if family in name:
            _warn_once(model, f"priced as {key}")
            return MODEL_PRICES[key]
    _warn_once(model, "cost recorded as 0")
    return ZERO_PRICE


def _warn_once(model: str, what: str) -> None:
    if model not in _warned:
        _warned.add(model)
        logger.warning("no price for LLM model %r in agent.usage.MODEL_PRICES: %s", model, what)


def usage_cost(*, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    """USD cost of one call, rounded to the model field's 6 decimals."""
    price = model_price(model)
    cost = (
        Decimal(input_tokens) * price.input_per_mtok
        + Decimal(output_tokens) * price.output_per_mtok
    ) / MILLION
    return cost.quantize(Decimal("0.000001"))


def usage_record(
    *,
    model: str,
    purpose: str,
    input_tokens: int,
    output_tokens: int,
    channel: str = "",
    retrieval_tokens: int = 0,
    retrieval_id: int | None = None,
    created_at: datetime | None = None,
    estimated: bool = False,
) -> LlmUsage:
    """Write the llm_usage row of one call, and add it to its day's total.

    ``retrieval_tokens`` is the part of ``input_tokens`` the auto-retrieval block
    added (an estimate): it is capped at ``input_tokens``. ``created_at``: when
    the call happened, if not now (imports). ``estimated``: the output tokens are an
    estimate (a stream cut before its final usage event).
    """
    from memory.models import MemoryRetrieval

    input_tokens = max(0, int(input_tokens))
    output_tokens = max(0, int(output_tokens))
    if retrieval_id is not None and not MemoryRetrieval.objects.filter(pk=retrieval_id).exists():
        retrieval_id = None  # the log row was purged meanwhile: keep the usage anyway
    with transaction.atomic():
        row = LlmUsage.objects.create(
            created_at=created_at or timezone.now(),
            model=model,
            purpose=purpose,
            channel=channel,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            retrieval_tokens=min(max(0, int(retrieval_tokens)), input_tokens),
            cost_usd=usage_cost(
                model=model, input_tokens=input_tokens, output_tokens=output_tokens
            ),
            retrieval_id=retrieval_id,
            estimated=estimated,
        )
        _day_add(row)
    return row


def _day_add(row: LlmUsage) -> None:
    """Add one call to its local day's total (under the write lock: no lost update)."""
    key = {
        "day": timezone.localdate(row.created_at),
        "purpose": row.purpose,
        "model": row.model,
    }
    sums = {
        "calls": 1,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "retrieval_tokens": row.retrieval_tokens,
        "cost_usd": row.cost_usd,
        "estimated_calls": int(row.estimated),
    }
    added = UsageDay.objects.filter(**key).update(
        **{name: F(name) + value for name, value in sums.items()}
    )
    if not added:
        UsageDay.objects.create(**key, **sums)
