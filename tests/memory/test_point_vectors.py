"""The stores' vectors(): the stored vectors the near-duplicate checks compare.

The embedded store keeps them between reads (memory.stores.vector_cache): an
entry must always be what the shard holds, whatever order writes, deletes,
drops and reads come in, and however few entries are kept.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory.stores.vectors import KNOWLEDGE, VectorPoint, point_id
from memory.stores.vectors_edge import EdgeVectorStore
from memory.stores.vectors_server import ServerVectorStore
from tests.stateful import stateful_settings

DIM = 8


def unit(*values: float) -> list[float]:
    vector = list(values) + [0.0] * (DIM - len(values))
    length = math.sqrt(sum(v * v for v in vector))
    return [v / length for v in vector]


VECTORS = [unit(1), unit(0, 1), unit(1, 1), unit(1, 0, 1), unit(0, 1, 1, 1)]
IDS = [point_id("fact", n) for n in range(1, 5)]


def stored(vector: list[float]) -> np.ndarray:
    """What the engine gives back for ``vector`` (it keeps float32)."""
    return np.asarray(np.asarray(vector, dtype=np.float32), dtype=np.float64)


@pytest.fixture(params=["edge", "server-local"])
def store(request, tmp_path):
    if request.param == "edge":
        made = EdgeVectorStore(tmp_path / "qdrant")
    else:
        from qdrant_client import QdrantClient

        made = ServerVectorStore(client=QdrantClient(location=":memory:"))
    yield made
    made.close()


def test_vectors_follow_every_write(store):
    first, second = IDS[:2]
    assert store.vectors(KNOWLEDGE, [first]) == {}  # no collection yet
    store.upsert(KNOWLEDGE, [VectorPoint(first, VECTORS[0]), VectorPoint(second, VECTORS[1])])

    read = store.vectors(KNOWLEDGE, [first, second, IDS[2]])
    assert set(read) == {first, second}
    assert np.allclose(read[first], stored(VECTORS[0]))
    assert read[first].dtype == np.float64

    # An edited memory is indexed again under the same point: the new vector is read.
    store.upsert(KNOWLEDGE, [VectorPoint(first, VECTORS[2])])
    assert np.allclose(store.vectors(KNOWLEDGE, [first])[first], stored(VECTORS[2]))

    # A forgotten memory's point is deleted: no vector of it is read any more.
    store.delete(KNOWLEDGE, [first])
    assert set(store.vectors(KNOWLEDGE, [first, second])) == {second}

    # A collection rebuilt (reindex --recreate) holds only what was written since.
    store.drop_collection(KNOWLEDGE)
    assert store.vectors(KNOWLEDGE, [second]) == {}
    store.upsert(KNOWLEDGE, [VectorPoint(second, VECTORS[3])])
    assert np.allclose(store.vectors(KNOWLEDGE, [second])[second], stored(VECTORS[3]))


def test_the_embedded_store_reads_a_kept_vector_without_the_engine(tmp_path, monkeypatch):
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        store.upsert(KNOWLEDGE, [VectorPoint(IDS[0], VECTORS[0]), VectorPoint(IDS[1], VECTORS[1])])
        store.vectors(KNOWLEDGE, [IDS[0]])
        shard = store._shards[KNOWLEDGE]
        asked: list[list[str]] = []
        retrieve = shard.retrieve

        class Spy:
            def __getattr__(self, name):
                return getattr(shard, name)

            def retrieve(self, ids, **kwargs):
                asked.append(list(ids))
                return retrieve(ids, **kwargs)

        monkeypatch.setitem(store._shards, KNOWLEDGE, Spy())
        read = store.vectors(KNOWLEDGE, [IDS[0], IDS[1]])

        assert set(read) == {IDS[0], IDS[1]}
        assert asked == [[IDS[1]]]  # only the vector not read before
        assert not read[IDS[0]].flags.writeable  # shared by every reader: never changed
    finally:
        store.close()


@pytest.mark.parametrize(
    "spelled", [str.upper, lambda point: point.replace("-", "")], ids=["upper", "no-hyphens"]
)
def test_a_write_under_another_spelling_of_the_id_drops_the_kept_vector(tmp_path, spelled):
    """The engine takes any spelling of a uuid and gives back the canonical one; a write
    or a delete under another spelling must still drop what is kept (found by the audit:
    every caller spells them canonically today)."""
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        point = IDS[0]
        store.upsert(KNOWLEDGE, [VectorPoint(point, VECTORS[0])])
        store.vectors(KNOWLEDGE, [point])
        store.upsert(KNOWLEDGE, [VectorPoint(spelled(point), VECTORS[1])])
        assert np.allclose(store.vectors(KNOWLEDGE, [point])[point], stored(VECTORS[1]))
        store.delete(KNOWLEDGE, [spelled(point)])
        assert store.vectors(KNOWLEDGE, [point]) == {}
    finally:
        store.close()


class KeptVectorsMachine(RuleBasedStateMachine):
    """Writes, deletes, drops, reopenings and reads in any order, with room for two
    vectors: every read is what the shard holds."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="makilab-vectors-")
        self.store = self._open()
        self.model: dict[str, list[float]] = {}

    def _open(self) -> EdgeVectorStore:
        store = EdgeVectorStore(self.folder)
        store._vector_cache.capacity = 2
        return store

    @rule(point=st.sampled_from(IDS), vector=st.sampled_from(VECTORS))
    def write(self, point, vector):
        self.store.upsert(KNOWLEDGE, [VectorPoint(point, vector)])
        self.model[point] = vector

    @rule(points=st.lists(st.sampled_from(IDS), min_size=1, max_size=3))
    def delete(self, points):
        self.store.delete(KNOWLEDGE, points)
        for point in points:
            self.model.pop(point, None)

    @rule(points=st.lists(st.sampled_from(IDS), min_size=1, max_size=4))
    def read(self, points):
        self._check(points)

    @rule()
    def drop(self):
        self.store.drop_collection(KNOWLEDGE)
        self.model.clear()

    @precondition(lambda self: self.model)
    @rule()
    def reopen(self):
        self.store.close()
        self.store = self._open()

    @invariant()
    def every_read_is_what_the_shard_holds(self):
        self._check(IDS)

    def _check(self, points):
        read = self.store.vectors(KNOWLEDGE, points)
        assert set(read) == {p for p in points if p in self.model}
        truth = {
            hit.id: hit.vector
            for hit in self.store.retrieve(
                KNOWLEDGE, list(points), with_vectors=True, with_payload=False
            )
        }
        for point, vector in read.items():
            assert np.allclose(vector, stored(self.model[point]))
            assert np.allclose(vector, truth[point])

    def teardown(self):
        import shutil

        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# The project's stateful settings: no deadline (a CI run on a loaded machine took 300 ms
# for a step of writes to a real shard, past hypothesis's default 200).
KeptVectorsMachine.TestCase.settings = stateful_settings(examples=40, steps=25)
test_kept_vectors_are_what_the_shard_holds = KeptVectorsMachine.TestCase
