"""The embedded Qdrant builds its search index: after a reindex, at `serve` start, on demand.

Qdrant Edge never optimizes by itself, so every search was an exact scan whose
cost grows with the collection. The threshold above which a segment gets an
index is lowered here (100 KB, ~65 vectors) so a few hundred points show it.
"""

from __future__ import annotations

import random

import pytest

from memory.stores import vectors_edge
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, VectorPoint
from memory.stores.vectors_edge import EdgeVectorStore

pytestmark = pytest.mark.slow


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(vectors_edge, "EDGE_INDEXING_THRESHOLD_KB", 100)


def _vector(rng: random.Random, dimension: int = 64) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(dimension)]


def test_optimize_indexes_what_lies_outside_and_finds_what_exact_search_finds(
    tmp_path, small_threshold
):
    rng = random.Random(3)
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        store.ensure_collection(CONVERSATIONS, 64)
        store.upsert(
            CONVERSATIONS,
            [
                VectorPoint(id=f"00000000-0000-0000-0000-{i:012d}", vector=_vector(rng))
                for i in range(600)
            ],
        )
        queries = [_vector(rng) for _ in range(30)]
        exact = [{h.id for h in store.search(CONVERSATIONS, q, limit=10)} for q in queries]
        assert store.optimize(min_unindexed=601) == {}  # below the asked minimum: left
        assert store.optimize() == {CONVERSATIONS: 600}
        assert store.optimize() == {}  # nothing left outside the index
        found = [{h.id for h in store.search(CONVERSATIONS, q, limit=10)} for q in queries]
        recall = sum(len(a & b) for a, b in zip(exact, found, strict=True)) / (10 * len(queries))
        assert recall >= 0.95
        # Points written after the build are found at once (outside the index until the next).
        store.upsert(
            CONVERSATIONS,
            [VectorPoint(id="11111111-0000-0000-0000-000000000001", vector=queries[0])],
        )
        assert store.search(CONVERSATIONS, queries[0], limit=1)[0].id.startswith("11111111")
        # One new point makes a segment too small to index: searched exactly, not rebuilt.
        assert store.optimize() == {}
    finally:
        store.close()


@pytest.mark.django_db
def test_reindex_leaves_no_point_outside_the_search_index(
    vector_store, local_embedder, small_threshold
):
    from memory.models import Fact
    from memory.services.maintenance import reindex

    Fact.objects.bulk_create(
        [
            Fact(key=f"fait_{i}", value=f"Le fait numéro {i} parle du jardin", memory_type="fact")
            for i in range(120)
        ]
    )
    reindex(collection="knowledge", recreate=True)
    assert vector_store.count(KNOWLEDGE) == 120
    assert vector_store.optimize() == {}  # reindex built it
