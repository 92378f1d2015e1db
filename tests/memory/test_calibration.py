"""The local embedder's dedup thresholds hold on the labelled French pairs.

Both texts of a pair are embedded as documents, as the dedup compares a new fact
with the stored ones. Run with ``-s`` to see the measured separation.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from memory.stores.embedders import (
    LOCAL_CANDIDATE_THRESHOLD,
    LOCAL_NEAR_DUPLICATE_THRESHOLD,
    VOYAGE_CANDIDATE_THRESHOLD,
    VOYAGE_NEAR_DUPLICATE_THRESHOLD,
    LocalEmbedder,
)

PAIRS_FILE = Path(__file__).parent / "data" / "near_duplicate_pairs.json"
SAME_FACT = ("near_identical", "paraphrase")
DIFFERENT_FACT = ("same_topic", "unrelated")


@pytest.fixture(scope="module")
def pairs() -> list[dict]:
    return json.loads(PAIRS_FILE.read_text())["pairs"]


@pytest.fixture(scope="module")
def scores(pairs) -> dict[str, list[tuple[float, str, str]]]:
    embedder = LocalEmbedder()
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    vectors = dict(zip(texts, embedder.embed_documents(texts), strict=True))
    by_label: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for pair in pairs:
        a, b = vectors[pair["a"]], vectors[pair["b"]]
        score = sum(x * y for x, y in zip(a, b, strict=True))
        by_label[pair["label"]].append((score, pair["a"], pair["b"]))
    print(f"\n{embedder.name}: cosine per label (documents vs documents)")
    for label in ("near_identical", "paraphrase", "same_topic", "unrelated"):
        values = sorted(s for s, _, _ in by_label[label])
        print(f"  {label:15} n={len(values):2}  min {values[0]:.4f}  max {values[-1]:.4f}")
    return by_label


def test_the_labelled_set_is_large_enough_and_covers_every_label(pairs):
    labels = [p["label"] for p in pairs]
    assert len(pairs) >= 40
    for label in (*SAME_FACT, *DIFFERENT_FACT):
        assert labels.count(label) >= 10, label
    assert len({(p["a"], p["b"]) for p in pairs}) == len(pairs), "duplicate pairs"


def test_no_different_fact_reaches_the_near_duplicate_threshold(scores):
    """Without an LLM, a pair above this threshold is merged: it must never be two facts."""
    offenders = [
        (round(s, 4), a, b)
        for label in DIFFERENT_FACT
        for s, a, b in scores[label]
        if s >= LOCAL_NEAR_DUPLICATE_THRESHOLD
    ]
    assert offenders == []
    highest = max(s for label in DIFFERENT_FACT for s, _, _ in scores[label])
    print(
        f"  near-duplicate {LOCAL_NEAR_DUPLICATE_THRESHOLD}: margin {LOCAL_NEAR_DUPLICATE_THRESHOLD - highest:.4f}"
    )


def test_the_near_duplicate_rule_still_catches_form_only_variants(scores):
    caught = [s for s, _, _ in scores["near_identical"] if s >= LOCAL_NEAR_DUPLICATE_THRESHOLD]
    print(f"  near-identical caught: {len(caught)}/{len(scores['near_identical'])}")
    assert len(caught) >= len(scores["near_identical"]) // 3


def test_every_same_fact_pair_is_a_dedup_candidate(scores):
    """Candidates go to the LLM: recall matters, a missed one becomes a duplicate fact."""
    missed = [
        (round(s, 4), a, b)
        for label in SAME_FACT
        for s, a, b in scores[label]
        if s < LOCAL_CANDIDATE_THRESHOLD
    ]
    assert missed == []


def test_few_unrelated_pairs_become_candidates(scores):
    unrelated = scores["unrelated"]
    passing = [s for s, _, _ in unrelated if s >= LOCAL_CANDIDATE_THRESHOLD]
    print(
        f"  unrelated above candidate {LOCAL_CANDIDATE_THRESHOLD}: {len(passing)}/{len(unrelated)}"
    )
    assert len(passing) <= len(unrelated) // 3


def test_thresholds_are_ordered():
    assert LOCAL_CANDIDATE_THRESHOLD < LOCAL_NEAR_DUPLICATE_THRESHOLD < 1.0
    assert VOYAGE_CANDIDATE_THRESHOLD < VOYAGE_NEAR_DUPLICATE_THRESHOLD < 1.0
