"""`benchmark history`: the per-message checks and pages that read the side tables, at 1× and 10×.

Seeds a throw-away memory with the side tables of a busy year (by default at
10×: 300,000 LLM usage rows, 200,000 retrieval log rows, 300,000 messages,
20,000 facts), times each operation at a tenth of that first, then at full
size, and prints p50/p95 with the row counts and the ratio between the two
sizes (1.0: the cost does not grow with the history).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from memory.services.bench_data import SUBJECTS, TOPICS
from memory.services.benchmarks import Timing, timed

CHANNELS = ("whatsapp", "mission_control", "email")
PURPOSES = ("chat", "chat", "chat", "extraction", "compaction", "dedup")
MODEL = "claude-sonnet-4-6"


_USAGE_TOTALS: dict = {}


def _usage_seed(n: int, days: int = 365) -> None:
    """n more LLM calls spread over ``days`` days, and the daily totals of all of them."""
    from agent.models import LlmUsage, UsageDay

    now = timezone.now()
    rng = random.Random(n)
    rows, totals = [], _USAGE_TOTALS
    for i in range(n):
        at = now - timedelta(seconds=rng.randrange(days * 86400))
        purpose = PURPOSES[i % len(PURPOSES)]
        tokens_in, tokens_out = rng.randrange(500, 20_000), rng.randrange(50, 1_000)
        cost = (Decimal(tokens_in) * 3 + Decimal(tokens_out) * 15) / 1_000_000
        rows.append(
            LlmUsage(
                created_at=at,
                model=MODEL,
                purpose=purpose,
                channel=CHANNELS[i % 3],
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                retrieval_tokens=tokens_in // 5,
                cost_usd=cost,
            )
        )
        day = totals.setdefault((timezone.localdate(at), purpose), [0, 0, 0, 0, Decimal("0")])
        for index, value in enumerate((1, tokens_in, tokens_out, tokens_in // 5, cost)):
            day[index] += value
    LlmUsage.objects.bulk_create(rows, batch_size=2000)
    UsageDay.objects.all().delete()
    UsageDay.objects.bulk_create(
        [
            UsageDay(
                day=day,
                purpose=purpose,
                model=MODEL,
                calls=v[0],
                input_tokens=v[1],
                output_tokens=v[2],
                retrieval_tokens=v[3],
                cost_usd=v[4],
            )
            for (day, purpose), v in totals.items()
        ],
        batch_size=2000,
    )


def _log_seed(n: int) -> None:
    from memory.models import MemoryRetrieval

    now = timezone.now()
    MemoryRetrieval.objects.bulk_create(
        [
            MemoryRetrieval(
                created_at=now - timedelta(minutes=n - i),
                channel=CHANNELS[i % 3],
                message_preview=f"question {i}",
                memories=[{"id": f"fact:{i % 997}", "kind": "fact", "text": "x"}],
                tokens_added=120,
            )
            for i in range(n)
        ],
        batch_size=2000,
    )


def _messages_seed(n: int, keep_uncompacted: int = 40) -> None:
    """n messages, all compacted but the last ones of each channel, as a long history is."""
    from memory.models import IndexState, Message, MessageRole

    now = timezone.now()
    Message.all_objects.update(compacted=True)  # the earlier history was compacted meanwhile
    Message.objects.bulk_create(
        [
            Message(
                channel=CHANNELS[i % 3],
                role=MessageRole.USER if i % 2 == 0 else MessageRole.ASSISTANT,
                content=f"{SUBJECTS[i % len(SUBJECTS)]} parle de {TOPICS[i % len(TOPICS)]} ({i})",
                created_at=now - timedelta(seconds=n - i),
                compacted=i < n - keep_uncompacted * 3,
                index_state=IndexState.SKIPPED,
            )
            for i in range(n)
        ],
        batch_size=2000,
    )


def _facts_seed(n: int) -> None:
    from memory.models import Fact, IndexState

    start = Fact.all_objects.count()
    Fact.objects.bulk_create(
        [
            Fact(
                key=f"fait_{start + i}",
                value=f"{SUBJECTS[i % len(SUBJECTS)]} et {TOPICS[(i * 7) % len(TOPICS)]} ({i})",
                memory_type="fact",
                importance=0.5,
                index_state=IndexState.SKIPPED,
            )
            for i in range(n)
        ],
        batch_size=2000,
    )


def _operations() -> dict[str, Callable[[], object]]:
    from agent.compaction import compaction_job_enqueue
    from dashboard.selectors import costs_summary_get
    from memory.services.retrieval.selection import recently_injected
    from memory.services.search import memory_search

    return {
        "costs": costs_summary_get,
        "injected": lambda: recently_injected("whatsapp", 3),
        "compaction": lambda: compaction_job_enqueue(channel="whatsapp"),
        "text": lambda: memory_search(
            query="quand est-ce que Julie parle du vélo au garage", mode="text", limit=10
        ),
    }


def _measure(repeat: int) -> dict[str, Timing]:
    return {
        name: Timing(name, [timed(op) for _ in range(repeat)]) for name, op in _operations().items()
    }


def history_benchmark(
    *, usage: int, logs: int, messages: int, facts: int, repeat: int, out: Callable[[str], None]
) -> dict[str, float]:
    sizes = {"costs": "usage", "injected": "logs", "compaction": "messages", "text": "facts"}
    full = {"usage": usage, "logs": logs, "messages": messages, "facts": facts}
    tenth = {name: max(1, value // 10) for name, value in full.items()}
    results: dict[str, dict[str, Timing]] = {}
    seeded = dict.fromkeys(full, 0)
    seeders = {"usage": _usage_seed, "logs": _log_seed, "messages": _messages_seed}
    seeders["facts"] = _facts_seed
    _USAGE_TOTALS.clear()
    for label, target in (("1x", tenth), ("10x", full)):
        for name, seed in seeders.items():
            seed(target[name] - seeded[name])
            seeded[name] = target[name]
        results[label] = _measure(repeat)
        rows = ", ".join(f"{name} {count:,}" for name, count in target.items())
        out(f"{label:<4} ({rows})")
        for timing in results[label].values():
            out(f"  {timing.line()}")
    ratios = {}
    for name, size in sizes.items():
        small, large = results["1x"][name], results["10x"][name]
        ratios[name] = large.percentile(95) / max(small.percentile(95), 1e-6)
        out(
            f"{name:<10} p95 {small.percentile(95):7.2f} ms at {tenth[size]:,} {size} → "
            f"{large.percentile(95):7.2f} ms at {full[size]:,}: ratio {ratios[name]:.2f}"
        )
    return ratios
