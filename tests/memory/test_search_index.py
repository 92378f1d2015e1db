"""The embedded Qdrant builds its search index: after a reindex, at `serve` start, on demand.

Qdrant Edge never optimizes by itself, so every search was an exact scan whose
cost grows with the collection. The threshold above which a segment gets an
index is lowered here (100 KB, ~65 vectors) so a few hundred points show it.
"""

from __future__ import annotations

import json
import random

import pytest

from memory.stores import edge_engine, vectors_edge
from memory.stores.vectors import CONVERSATIONS, INT8_QUANTILE, KNOWLEDGE, VectorPoint
from memory.stores.vectors_edge import EdgeVectorStore

pytestmark = pytest.mark.slow


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(edge_engine, "EDGE_INDEXING_THRESHOLD_KB", 100)


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


def _points(rng: random.Random, start: int, n: int) -> list[VectorPoint]:
    return [
        VectorPoint(id=f"00000000-0000-0000-0000-{i:012d}", vector=_vector(rng))
        for i in range(start, start + n)
    ]


def _top(store: EdgeVectorStore, queries: list[list[float]]) -> list[dict[str, float]]:
    """Each query's ten nearest conversations: {point id: cosine}."""
    return [{h.id: h.score for h in store.search(CONVERSATIONS, q, limit=10)} for q in queries]


def _assert_exact(exact: list[dict[str, float]], found: list[dict[str, float]]) -> None:
    """``found`` holds the hits exact search found (recall@10 at least 0.95), each with
    its exact cosine (on the int8 copy alone the cosines differ by about 1e-3)."""
    recall = sum(len(a.keys() & b.keys()) for a, b in zip(exact, found, strict=True))
    assert recall / (10 * len(exact)) >= 0.95
    for before, after in zip(exact, found, strict=True):
        for point_id in before.keys() & after.keys():
            assert after[point_id] == pytest.approx(before[point_id], abs=1e-5)


def _outside(store: EdgeVectorStore, name: str) -> int:
    info = store._shard(name).info()
    return info.points_count - info.indexed_vectors_count


@pytest.mark.django_db  # the upkeep merges the keyword indexes too
def test_the_index_follows_the_collection_as_it_grows_once_the_store_is_idle(
    vector_store, small_threshold, monkeypatch
):
    """Points written while serving are indexed by the periodic task, never during a
    burst of searches or writes: building holds the whole process for seconds."""
    from makilab.celery import app
    from memory import tasks
    from memory.services import maintenance

    assert "memory.search_index_maintain" in {
        entry["task"] for entry in app.conf.beat_schedule.values()
    }
    # Above the engine's own threshold (100 KB: 400 vectors of 64 floats), so that the
    # minimum seen below is this project's, not Qdrant's.
    monkeypatch.setattr(maintenance, "SEARCH_INDEX_MIN_UNINDEXED", 700)
    quiet = maintenance.SEARCH_INDEX_QUIET_S
    clock = [1_000.0]
    monkeypatch.setattr(vectors_edge, "_clock", lambda: clock[0])
    rng = random.Random(5)
    vector_store.ensure_collection(CONVERSATIONS, 64)
    vector_store.upsert(CONVERSATIONS, _points(rng, 0, 800))
    clock[0] += quiet  # the writes are old by now: only the search below is recent
    vector_store.search(CONVERSATIONS, _vector(rng), limit=5)

    clock[0] += quiet - 1  # searched a moment ago: left alone
    assert tasks.search_index_maintain_task() == {}
    assert _outside(vector_store, CONVERSATIONS) == 800

    clock[0] += 2  # quiet long enough: built
    assert tasks.search_index_maintain_task() == {CONVERSATIONS: 800}
    assert _outside(vector_store, CONVERSATIONS) == 0

    vector_store.upsert(CONVERSATIONS, _points(rng, 800, 600))  # fewer than the minimum
    clock[0] += quiet
    assert tasks.search_index_maintain_task() == {}
    assert _outside(vector_store, CONVERSATIONS) == 600

    vector_store.upsert(CONVERSATIONS, _points(rng, 1400, 200))  # the collection grew on
    assert tasks.search_index_maintain_task() == {}  # written a moment ago: left alone
    clock[0] += quiet
    assert tasks.search_index_maintain_task() == {CONVERSATIONS: 800}
    assert _outside(vector_store, CONVERSATIONS) == 0
    hits = vector_store.search(CONVERSATIONS, _vector(rng), limit=1600)
    assert len(hits) == 1600  # nothing lost by the builds


@pytest.mark.django_db  # the upkeep merges the keyword indexes too
@pytest.mark.parametrize("use", ["delete", "retrieve"])
def test_a_deletion_or_a_read_by_id_counts_as_use_for_the_upkeep(
    vector_store, small_threshold, monkeypatch, use
):
    """Forgetting deletes points and the pre-hook reads vectors by id: the store is in
    use then, and the upkeep must not start a build that holds the process for seconds."""
    from memory import tasks
    from memory.services import maintenance

    monkeypatch.setattr(maintenance, "SEARCH_INDEX_MIN_UNINDEXED", 700)
    quiet = maintenance.SEARCH_INDEX_QUIET_S
    clock = [1_000.0]
    monkeypatch.setattr(vectors_edge, "_clock", lambda: clock[0])
    rng = random.Random(9)
    points = _points(rng, 0, 800)
    vector_store.upsert(CONVERSATIONS, points)
    clock[0] += quiet
    if use == "delete":
        vector_store.delete(CONVERSATIONS, [points[0].id])
    else:
        assert len(vector_store.retrieve(CONVERSATIONS, [points[0].id])) == 1

    assert tasks.search_index_maintain_task() == {}  # in use a moment ago: left alone
    clock[0] += quiet
    outside = 799 if use == "delete" else 800
    assert tasks.search_index_maintain_task() == {CONVERSATIONS: outside}


def test_an_indexed_search_walks_an_int8_copy_and_returns_the_exact_hits_and_cosines(
    tmp_path, small_threshold
):
    """Scalar quantization (vectors.INT8_QUANTILE, INT8_OVERSAMPLING): every shard,
    created or reopened, keeps an int8 copy of its vectors, built with its index. A
    search walks the copy, then ranks its hits again on the stored vectors: the top
    hits and their cosines are those of exact search."""
    rng = random.Random(5)
    path = tmp_path / "qdrant"
    store = EdgeVectorStore(path)
    try:
        store.upsert(CONVERSATIONS, _points(rng, 0, 600))
        queries = [_vector(rng) for _ in range(30)]
        exact = _top(store, queries)
        assert store.optimize() == {CONVERSATIONS: 600}
        _assert_exact(exact, _top(store, queries))
    finally:
        store.close()

    config_file = path / CONVERSATIONS / "edge_config.json"
    config = json.loads(config_file.read_text())
    quantization = {"scalar": {"type": "int8", "quantile": INT8_QUANTILE, "always_ram": True}}
    assert config["vectors"][""]["quantization_config"] == quantization
    del config["vectors"][""]["quantization_config"]  # as a shard created by an earlier version
    config_file.write_text(json.dumps(config))
    reopened = EdgeVectorStore(path)
    try:
        assert len(reopened.search(CONVERSATIONS, queries[0], limit=10)) == 10
        reloaded = json.loads(config_file.read_text())["vectors"][""]["quantization_config"]
        assert reloaded == quantization
    finally:
        reopened.close()


def test_a_store_indexed_before_the_int8_copy_gets_it_from_the_upkeep(
    tmp_path, small_threshold, monkeypatch
):
    """A store built by an earlier version (its segments indexed without the int8 copy)
    opens with the copy in its configuration and is searched on its stored vectors (the
    hits and cosines of exact search); the index's upkeep (at `serve` start, then the
    periodic task) rebuilds those segments with the copy, though no point lies outside
    the index, once: then searches walk the copy, still with exact cosines."""
    import qdrant_edge as qe

    from memory.services.maintenance import SEARCH_INDEX_MIN_UNINDEXED

    def earlier_config(dimension: int):
        return qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
            optimizers=qe.EdgeOptimizersConfig(
                indexing_threshold=edge_engine.EDGE_INDEXING_THRESHOLD_KB
            ),
            max_search_threads=edge_engine.EDGE_SEARCH_THREADS,
        )

    rng = random.Random(11)
    path = tmp_path / "qdrant"
    with monkeypatch.context() as earlier:
        earlier.setattr(edge_engine, "edge_config", earlier_config)
        store = EdgeVectorStore(path)
        store.upsert(CONVERSATIONS, _points(rng, 0, 600))
        queries = [_vector(rng) for _ in range(20)]
        exact = _top(store, queries)
        assert store.optimize() == {CONVERSATIONS: 600}
        store.close()
    config_file = path / CONVERSATIONS / "edge_config.json"
    assert "quantization_config" not in json.loads(config_file.read_text())["vectors"][""]

    reopened = EdgeVectorStore(path)
    try:
        _assert_exact(exact, _top(reopened, queries))
        assert "quantization_config" in json.loads(config_file.read_text())["vectors"][""]
        assert not _walks_a_copy(reopened, queries, exact, monkeypatch)

        assert reopened.optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED) == {CONVERSATIONS: 600}
        assert _walks_a_copy(reopened, queries, exact, monkeypatch)
        _assert_exact(exact, _top(reopened, queries))
        assert reopened.optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED) == {}  # done once
        assert reopened.count(CONVERSATIONS) == 600
    finally:
        reopened.close()


def _walks_a_copy(store, queries, exact, monkeypatch) -> bool:
    """Whether searches walk an int8 copy: asked not to rank again on the stored vectors,
    their cosines then stray from exact search's (about 1e-3)."""
    import qdrant_edge as qe

    with monkeypatch.context() as raw:
        raw.setattr(
            edge_engine,
            "edge_search_params",
            lambda: qe.SearchParams(quantization=qe.QuantizationSearchParams(rescore=False)),
        )
        found = _top(store, queries)
    return any(
        abs(after[point_id] - before[point_id]) > 1e-4
        for before, after in zip(exact, found, strict=True)
        for point_id in before.keys() & after.keys()
    )


def test_a_collection_of_a_thousand_points_gets_its_index_from_the_upkeep(tmp_path):
    """A memory's knowledge holds a few thousand points for years: below Qdrant's default
    threshold (~6,500 vectors of 384 dimensions) and the upkeep's minimum (5,000 points
    outside the index), every one of its searches stayed exact. From 1,000 points it is
    indexed, then rebuilt as it doubles (the real threshold and minimum here)."""
    from memory.services.maintenance import SEARCH_INDEX_MIN_UNINDEXED

    rng = random.Random(5)
    store = EdgeVectorStore(tmp_path / "qdrant")

    def add(first: int, count: int) -> None:
        store.upsert(
            KNOWLEDGE,
            [
                VectorPoint(id=f"00000000-0000-0000-0000-{i:012d}", vector=_vector(rng, 384))
                for i in range(first, first + count)
            ],
        )

    try:
        store.ensure_collection(KNOWLEDGE, 384)
        add(0, 900)
        assert store.optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED) == {}  # too few yet
        add(900, 300)
        assert store.optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED) == {KNOWLEDGE: 1200}
        add(1200, 700)
        assert store.optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED) == {}  # 700 < 1,200
        add(1900, 600)
        assert store.optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED) == {KNOWLEDGE: 1300}
    finally:
        store.close()
