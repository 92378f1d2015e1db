"""An embedded collection written anew (memory.stores.edge_rewrite): it keeps every
remaining point and no byte of the deleted ones, and a process killed at any step of
the swap leaves one complete collection at the collection's path on the next start."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memory.exceptions import StoreUnavailable
from memory.stores import edge_engine, edge_rewrite
from memory.stores.vectors import KNOWLEDGE, VectorPoint, point_id
from memory.stores.vectors_edge import EdgeVectorStore

DIM = 4
KEPT = 300  # more than a scroll page (vectors.SCROLL_PAGE)
SECRET = "Zanzibar"
SECRET_ID = point_id("fact", 10_000)


class Killed(BaseException):
    """The process stops here: no except clause of the store runs."""


def _vector(n: int) -> list[float]:
    vector = [math.cos(n), math.sin(n), math.cos(3 * n), 1.0 + n % 7]
    length = math.sqrt(sum(v * v for v in vector))
    return [v / length for v in vector]


def _points() -> list[VectorPoint]:
    kept = [
        VectorPoint(point_id("fact", n), _vector(n), {"type": "fact", "text": f"fait {n}"})
        for n in range(KEPT)
    ]
    return [*kept, VectorPoint(SECRET_ID, _vector(KEPT), {"type": "fact", "text": SECRET})]


def _files_holding(folder: Path, word: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and word.encode() in p.read_bytes()]


def _assert_complete(store: EdgeVectorStore) -> None:
    """Every kept point is there and found by its vector; the deleted one is not."""
    assert store.count(KNOWLEDGE) == KEPT
    ids = set(store.iter_ids(KNOWLEDGE))
    assert ids == {point_id("fact", n) for n in range(KEPT)}
    for n in (0, 1, KEPT // 2, KEPT - 1):
        hits = store.search(KNOWLEDGE, _vector(n), limit=1)
        assert [(h.id, h.payload["text"]) for h in hits] == [(point_id("fact", n), f"fait {n}")]
    assert sorted(p.name for p in store.path.iterdir() if "." in p.name and p.is_dir()) == []


@pytest.fixture
def store(tmp_path):
    store = EdgeVectorStore(tmp_path / "qdrant")
    store.upsert(KNOWLEDGE, _points())
    store.delete(KNOWLEDGE, [SECRET_ID])
    assert _files_holding(store.path, SECRET), "a deleted point's text stays on disk"
    yield store
    store.close()


def _reopened(store: EdgeVectorStore) -> EdgeVectorStore:
    store.close()
    return EdgeVectorStore(store.path)


def test_a_rewrite_keeps_every_point_and_no_byte_of_the_deleted_ones(store):
    record = (store.path / KNOWLEDGE / edge_engine.EDGE_EMBEDDER_FILE).read_bytes()
    kept_before = store.vectors(KNOWLEDGE, [point_id("fact", 1)])  # cached

    assert store.rewrite(KNOWLEDGE) == KEPT

    assert _files_holding(store.path, SECRET) == []
    _assert_complete(store)
    assert (store.path / KNOWLEDGE / edge_engine.EDGE_EMBEDDER_FILE).read_bytes() == record
    assert store.collection_record(KNOWLEDGE)[1] == record.decode().split('"')[-2]
    after = store.vectors(KNOWLEDGE, [point_id("fact", 1)])
    assert list(after[point_id("fact", 1)]) == list(kept_before[point_id("fact", 1)])
    store.upsert(KNOWLEDGE, [VectorPoint(SECRET_ID, _vector(1), {"text": "nouveau"})])
    assert store.count(KNOWLEDGE) == KEPT + 1  # the new shard takes writes
    store.delete(KNOWLEDGE, [SECRET_ID])
    reopened = _reopened(store)
    _assert_complete(reopened)
    assert _files_holding(reopened.path, SECRET) == []
    reopened.close()


def test_a_missing_collection_is_not_rewritten(store):
    assert store.rewrite("conversations") is None
    assert not (store.path / "conversations").exists()


def _killed_at(monkeypatch, step: str) -> None:
    """The process dies at ``step`` of the rewrite."""
    if step == "while building":
        original_sync = edge_rewrite._sync_tree

        def sync_then_die(folder):
            original_sync(folder)
            raise Killed

        monkeypatch.setattr(edge_rewrite, "_sync_tree", sync_then_die)
        return
    renames = {"after moving the old one aside": 1, "after moving the new one in": 2}[step]
    original_rename, calls = edge_rewrite._rename, []

    def rename_then_die(source, target):
        original_rename(source, target)
        calls.append(target)
        if len(calls) == renames:
            raise Killed

    monkeypatch.setattr(edge_rewrite, "_rename", rename_then_die)


@pytest.mark.parametrize(
    ("step", "secret_left"),
    [
        ("while building", True),  # the old collection stays; the job runs again
        ("after moving the old one aside", False),
        ("after moving the new one in", False),
    ],
)
def test_a_rewrite_killed_at_any_step_leaves_a_complete_collection(
    store, monkeypatch, step, secret_left
):
    _killed_at(monkeypatch, step)
    with pytest.raises(Killed):
        store.rewrite(KNOWLEDGE)
    assert any("." in p.name for p in store.path.iterdir() if p.is_dir())  # left over
    monkeypatch.undo()

    reopened = _reopened(store)  # the next start

    _assert_complete(reopened)
    assert bool(_files_holding(reopened.path, SECRET)) == secret_left
    reopened.close()


def test_a_leftover_half_built_folder_is_discarded_at_start(store):
    junk = edge_rewrite.rewrite_path(store.path / KNOWLEDGE)
    (junk / "segments").mkdir(parents=True)
    (junk / "wal").mkdir()  # no edge_config.json: cut short at its creation

    reopened = _reopened(store)

    _assert_complete(reopened)
    assert not junk.exists()
    reopened.close()


def test_a_rewrite_that_fails_in_process_leaves_the_store_usable(store, monkeypatch):
    original_rename, calls = edge_rewrite._rename, []

    def refused(source, target):
        calls.append(target)
        if len(calls) == 2:
            raise OSError("disque plein")
        original_rename(source, target)

    monkeypatch.setattr(edge_rewrite, "_rename", refused)
    with pytest.raises(StoreUnavailable, match="disque plein"):
        store.rewrite(KNOWLEDGE)
    monkeypatch.undo()

    _assert_complete(store)
    store.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), _vector(1), {"text": "fait 1"})])
    assert store.rewrite(KNOWLEDGE) == KEPT  # and the next run does it
    assert _files_holding(store.path, SECRET) == []
