"""Benchmarks printed by `manage.py benchmark`: figures, not assertions."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.utils import timezone

from memory.models import Message, MessageRole


@dataclass
class Timing:
    name: str
    samples_ms: list[float]

    def percentile(self, q: float) -> float:
        ordered = sorted(self.samples_ms)
        if not ordered:
            return 0.0
        index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
        return ordered[index]

    def line(self) -> str:
        return (
            f"{self.name:<10} p50 {self.percentile(50):7.2f} ms  p95 {self.percentile(95):7.2f} ms"
            f"  p99 {self.percentile(99):7.2f} ms  mean {statistics.fmean(self.samples_ms or [0]):7.2f} ms"
            f"  (n={len(self.samples_ms)})"
        )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


TOPICS = [
    "le potager et les tomates",
    "la réunion budget du lundi",
    "l'épaule de Mickael",
    "le vélo au garage",
    "les vacances à Biarritz",
    "le code du portail",
    "la piscine du mardi",
    "le livre de science-fiction",
    "le rendez-vous chez le dentiste",
    "le déménagement de David",
    "la recette du gâteau",
    "le train pour Lyon",
]


def exchanges_seed(
    n: int, *, channels: tuple[str, ...] = ("whatsapp", "mission_control")
) -> list[int]:
    """n exchanges (user + assistant rows) written in bulk, without enqueueing; returns root ids."""
    now = timezone.now()
    users = [
        Message(
            channel=channels[i % len(channels)],
            role=MessageRole.USER,
            content=f"Message {i} : on reparle de {TOPICS[i % len(TOPICS)]} ({i * 7919 % 1000})",
            created_at=now,
        )
        for i in range(n)
    ]
    Message.objects.bulk_create(users, batch_size=500)
    roots = list(
        Message.objects.filter(role=MessageRole.USER)
        .order_by("-id")
        .values_list("id", "channel")[:n]
    )
    replies = [
        Message(
            channel=channel,
            role=MessageRole.ASSISTANT,
            content=f"D'accord, noté pour le message {rid}.",
            reply_to_id=rid,
            created_at=now,
        )
        for rid, channel in roots
    ]
    Message.objects.bulk_create(replies, batch_size=500)
    return sorted(rid for rid, _ in roots)


def indexing_benchmark(
    *, n: int, batch_size: int, per_row: int, out: Callable[[str], None]
) -> None:
    from memory.services.indexing import KIND_MESSAGE, index_row, index_rows
    from memory.stores.embedders import get_embedder

    embedder = get_embedder()
    load_ms = timed(lambda: embedder.embed_documents(["préchauffage du modèle"]))
    ids = exchanges_seed(n)
    out(
        f"embedder {embedder.name} ({embedder.dimension} dims), first call {load_ms:.0f} ms; {n} exchanges"
    )

    batches = [ids[i : i + batch_size] for i in range(0, len(ids), batch_size)]
    start = time.perf_counter()
    samples = [timed(lambda b=batch: index_rows(KIND_MESSAGE, b)) for batch in batches]
    elapsed = time.perf_counter() - start
    out(
        f"batched   {n / elapsed:8.1f} docs/s end to end (embed + upsert + mark), batch of {batch_size}"
    )
    out(Timing("batch", samples).line())

    sample_ids = ids[:per_row]
    start = time.perf_counter()
    samples = [timed(lambda rid=rid: index_row(KIND_MESSAGE, rid)) for rid in sample_ids]
    elapsed = time.perf_counter() - start
    out(f"per-row   {len(sample_ids) / elapsed:8.1f} docs/s (the task path: one row per task)")
    out(Timing("row", samples).line())
