"""Fusing the sources' ranked lists (RRF, the time source, newer versions first), and memory_rank."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

from memory.models import Fact, MemorySettings
from memory.services.fusion import reciprocal_rank_fusion
from memory.services.retrieval.candidates import hydrate
from memory.services.retrieval.result import Candidate
from memory.services.retrieval.semantic import semantic_ids, semantic_search
from memory.services.retrieval.sources import (
    SOURCE_KEYWORDS,
    SOURCE_SEMANTIC,
    SOURCE_T1,
    SOURCE_TIME,
    keyword_search,
    t1_context,
    window_ids,
)

# T1's list is context, not relevance: it weighs less than a semantic or keyword hit.
SOURCE_WEIGHTS = {SOURCE_T1: 0.1, SOURCE_SEMANTIC: 1.0, SOURCE_KEYWORDS: 1.0, SOURCE_TIME: 1.0}
FUSION_HEAD = 40
# How far down the ranked list a newer version of a topic may climb (see newer_first).
NEWER_FIRST_HEAD = 6


def prefetch(
    ranked: dict[str, list[tuple[str, float]]],
    *,
    text: str,
    now: datetime,
    tz,
    also: Iterable[str] = (),
) -> tuple[tuple[datetime, datetime] | None, list[str], dict[str, Candidate]]:
    """What fusion needs that does not depend on the semantic source.

    Run while the query embedding is still being computed: the time window,
    its extra memories, and the T1 hydration of every id found so far, and of
    ``also`` (the memories carried from the last turns, so the block does not
    re-read them after the embedding).
    """
    from memory.services.timeframe import time_window

    window = time_window(text, now=now, tz=tz)
    extras = window_ids(*window) if window else []
    ids = [item_id for items in ranked.values() for item_id, _ in items] + extras + sorted(also)
    return window, extras, hydrate(list(dict.fromkeys(ids)), now)


def fuse(
    ranked: dict[str, list[tuple[str, float]]],
    *,
    text: str,
    now: datetime,
    tz,
    prefetched: tuple | None = None,
) -> tuple[list, dict[str, Candidate]]:
    """RRF over the sources, plus the time source when the message names a period.

    Returns the fused entries (best first) and their T1 hydration. The time
    source ranks the memories of the period: first those the other sources
    found (in their fused order), then the rest of the period, newest first.
    """
    fused = reciprocal_rank_fusion(ranked, weights=SOURCE_WEIGHTS)[:FUSION_HEAD]
    window, extras, candidates = prefetched or prefetch({}, text=text, now=now, tz=tz)
    missing = [str(entry.id) for entry in fused if str(entry.id) not in candidates]
    if missing:
        candidates = {**candidates, **hydrate(missing, now)}
    if window:
        start, end = window
        in_window: dict[str, float] = {}
        for item_id in [str(entry.id) for entry in fused] + extras:
            candidate = candidates.get(item_id)
            if candidate is not None and start <= candidate.timestamp < end:
                in_window.setdefault(candidate.id, 1.0)
        if in_window:
            ranked = {**ranked, SOURCE_TIME: list(in_window.items())}
            fused = reciprocal_rank_fusion(ranked, weights=SOURCE_WEIGHTS)[:FUSION_HEAD]
    return fused, candidates


def newer_first(
    ids: list[str], *, vectors: dict, timestamps: dict[str, datetime], threshold: float
) -> list[str]:
    """Neighbours that are versions of one topic (cosine >= threshold): the newer goes first.

    "Le code du portail est 1937" then, months later, "le nouveau code est
    4821": both match, the newer is the answer. Only adjacent pairs swap, so a
    newer memory moves up past versions of its own topic, never past others.
    """
    import numpy as np

    ordered = list(ids)
    changed = True
    while changed:
        changed = False
        for i in range(len(ordered) - 1):
            a, b = ordered[i], ordered[i + 1]
            if a not in vectors or b not in vectors:
                continue
            if timestamps[b] > timestamps[a] and float(np.dot(vectors[a], vectors[b])) >= threshold:
                ordered[i], ordered[i + 1] = b, a
                changed = True
    return ordered


def point_vectors(ids: list[str]) -> dict[str, Any]:
    """The stored vectors of memories (by our ids, as float64 arrays), for near-duplicate
    checks (the embedded store keeps them between messages: memory.stores.vector_cache)."""
    from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store, point_id

    wanted: dict[str, list[tuple[str, str]]] = {CONVERSATIONS: [], KNOWLEDGE: []}
    kinds = {"message": KIND_MESSAGE, "fact": KIND_FACT, "summary": KIND_SUMMARY}
    vectors: dict[str, Any] = {}
    for item_id in ids:
        kind, _, raw = item_id.partition(":")
        collection = CONVERSATIONS if kind == "message" else KNOWLEDGE
        wanted[collection].append((point_id(kinds[kind], int(raw)), item_id))
    store = get_vector_store()
    for collection, pairs in wanted.items():
        if not pairs:
            continue
        by_point = dict(pairs)
        # The vectors alone: the payloads (texts) cost more than the vectors to copy out
        # (100,000 memories, alternating: fusion p50 2.28 -> 1.73 ms).
        for point, vector in store.vectors(collection, list(by_point)).items():
            vectors[by_point[point]] = vector
    return vectors


def memory_rank(
    *,
    message: str,
    channel: str,
    mode: str = "hybrid",
    limit: int = 20,
    now: datetime | None = None,
    memory_settings: MemorySettings | None = None,
    scores: dict[str, float] | None = None,
    gate: bool = True,
) -> tuple[list[str], list[str]]:
    """(always-injected identity facts, memory ids ranked) for a message by one mode.

    Modes: "semantic", "text" or "hybrid". Hybrid ranks as auto_retrieve does
    (T1 + semantic above min_score + keywords, fused) and returns the identity
    facts it always injects apart (they take no slot); it skips what depends
    on the conversation so far (history, past injections). Sources run one
    after the other here: this is for measuring quality (and the hybrid mode
    of search). ``scores``, when given, receives each ranked id's fused score.
    ``gate``: hybrid ranks nothing for small talk or a message the relevance gate
    finds off-topic, as the pre-hook injects nothing then; a search the owner
    typed (``gate=False``) is ranked whatever it is.
    """
    from memory.services.relevance import gate_passes, is_small_talk

    memory_settings = memory_settings or MemorySettings.load()
    now = now or timezone.now()
    text = message[:4000]
    ranked: dict[str, list[tuple[str, float]]] = {}
    core: list[Fact] = []
    if mode == "hybrid" and gate and is_small_talk(text):
        return [], []
    if mode in ("semantic", "hybrid"):
        min_score = memory_settings.min_score if mode == "hybrid" else None
        semantic = semantic_search(text, limit=limit, min_score=min_score)
        ranked[SOURCE_SEMANTIC] = semantic_ids(semantic["hits"])
    if mode in ("text", "hybrid"):
        ranked[SOURCE_KEYWORDS] = keyword_search(text, limit=limit)
    if (
        mode == "hybrid"
        and gate
        and not gate_passes(
            margin=semantic["margin"],
            gate_margin=semantic["embedder"].gate_margin,
            semantic_ids=[i for i, _ in ranked[SOURCE_SEMANTIC]],
            keyword_ids=[i for i, _ in ranked[SOURCE_KEYWORDS]],
        )
    ):
        return [], []
    if mode == "hybrid":
        t1 = t1_context(channel, memory_settings, now)
        core, ranked[SOURCE_T1] = t1.core, t1.ranked
        fused, candidates = fuse(ranked, text=text, now=now, tz=ZoneInfo(settings.TIME_ZONE))
    else:
        fused = reciprocal_rank_fusion(ranked)
        candidates = hydrate([str(entry.id) for entry in fused], now)
    core_ids = [f"fact:{fact.pk}" for fact in core]
    ordered: list[str] = []
    timestamps: dict[str, datetime] = {}
    for entry in fused:
        candidate = candidates.get(str(entry.id))
        if candidate is not None and candidate.id not in ordered and candidate.id not in core_ids:
            ordered.append(candidate.id)
            timestamps[candidate.id] = candidate.timestamp
            if scores is not None:
                scores[candidate.id] = float(entry.rrf)
    if mode == "hybrid" and ordered:
        head = ordered[:NEWER_FIRST_HEAD]
        ordered[:NEWER_FIRST_HEAD] = newer_first(
            head,
            vectors=point_vectors(head),
            timestamps=timestamps,
            threshold=semantic["embedder"].same_topic_threshold,
        )
    return core_ids, ordered[:limit]
