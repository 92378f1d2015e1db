"""The embedded vector store: Qdrant Edge shards in process (``qdrant-edge-py``).

One shard folder per collection under ``QDRANT_PATH``. ONE process owns the
folder: a lock file is taken on open and a second opener gets
``StoreUnavailable`` naming the folder. The engine is imported inside functions
only (the lazy-import test in tests/memory/test_embedders.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory.exceptions import DimensionMismatch, StoreUnavailable
from memory.stores import edge_engine, edge_rewrite
from memory.stores.vector_cache import PointVectorCache
from memory.stores.vectors import (
    COLLECTIONS,
    DIMENSION_MISMATCH_MESSAGE,
    SCROLL_PAGE,
    STORE_CLOSED_MESSAGE,
    Filters,
    VectorHit,
    VectorPoint,
    check_embedder,
    check_vectors,
    current_embedder,
    plain_vector,
    scored_hit,
    stored_hit,
)

logger = logging.getLogger(__name__)

# Shards a close found unwritable: held, never closed nor dropped, until the process ends.
_UNCLOSED: list = []

# The clock of "when was this store last searched, read or written" (optimize's quiet_s);
# tests move it.
_clock = time.monotonic


class EdgeVectorStore:
    """Qdrant Edge shards in ``path/<collection>/``; thread-safe; one owner process."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._shards: dict[str, Any] = {}
        self._dimensions: dict[str, int] = {}
        self._embedders: dict[str, str] = {}  # the embedder that filled each collection
        # The vectors the near-duplicate checks read (vectors()); this process is the
        # folder's one writer, so each write below drops what it changes.
        self._vector_cache = PointVectorCache()
        self._closed = False
        self._lock_fd: int | None = None  # the folder's lock (edge_engine.folder_lock)
        self._last_used = float("-inf")  # _clock() of the last search, read or write
        self._lock_fd = edge_engine.folder_open(self.path)
        try:
            edge_rewrite.store_recover(self.path)  # a rewrite a crash cut short
        except OSError as exc:
            os.close(self._lock_fd)
            raise StoreUnavailable(
                edge_engine.EDGE_ERROR_MESSAGE.format(path=self.path, detail=exc)
            ) from exc

    def __repr__(self) -> str:
        return f"<EdgeVectorStore {self.path}>"

    def _collection_path(self, name: str) -> Path:
        if name not in COLLECTIONS and (not name.isidentifier() or name.startswith("_")):
            raise ValueError(f"invalid collection name: {name!r}")
        return self.path / name

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable(STORE_CLOSED_MESSAGE)

    def _record_embedder(self, name: str, embedder: str) -> None:
        """Record ``embedder`` as the one that filled ``name``: on disk, and in this process
        whether the folder took it or not."""
        self._embedders[name] = embedder
        edge_engine.record_write(name, self._collection_path(name), embedder)

    def _shard(self, name: str) -> Any | None:
        """The open shard of ``name``, loading it from disk if needed; None if absent."""
        self._check_open()
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        dimension = edge_engine.folder_dimension(self._collection_path(name))
        if dimension is None:
            return None
        shard = edge_engine.shard_load(self.path, self._collection_path(name), dimension)
        self._shards[name] = shard
        self._dimensions[name] = dimension
        self._embedders[name] = edge_engine.record_adopted(name, self._collection_path(name))
        try:
            self._ensure_indexes(shard)  # a folder of an earlier version may lack some
        except StoreUnavailable as exc:  # filters then scan: no reason to refuse a delete
            logger.warning("Qdrant Edge collection %s: payload indexes not built (%s)", name, exc)
        return shard

    def ensure_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create ``name`` if missing, recorded as filled by ``embedder`` (default: the one
        in use); an existing one must have the dimension and the embedder."""
        with self._lock:
            shard = self._shard(name)
            if shard is not None:
                existing = self._dimensions[name]
                if existing != dimension:
                    raise DimensionMismatch(
                        DIMENSION_MISMATCH_MESSAGE.format(
                            name=name, existing=existing, expected=dimension
                        )
                    )
                check_embedder(name, self._embedders.get(name), embedder)
                return
            path = self._collection_path(name)
            shard = edge_engine.shard_create(self.path, path, dimension)
            self._shards[name] = shard
            self._dimensions[name] = dimension
            self._record_embedder(name, embedder or current_embedder())
            self._ensure_indexes(shard)
            logger.info("Created Qdrant Edge collection %s (%d dims) in %s", name, dimension, path)

    def _ensure_indexes(self, shard: Any) -> None:
        try:
            edge_engine.payload_indexes_ensure(shard)
        except Exception as exc:
            raise edge_engine.engine_error(self.path, exc) from exc

    def upsert(self, name: str, points: list[VectorPoint], *, embedder: str | None = None) -> None:
        """Write ``points``, made by ``embedder`` (default: the one in use)."""
        if not points:
            return
        import qdrant_edge as qe

        with self._lock:
            if self._shard(name) is None:
                self.ensure_collection(name, len(points[0].vector), embedder=embedder)
            shard = self._shards[name]
            check_embedder(name, self._embedders.get(name), embedder)
            check_vectors(name, points, self._dimensions[name])
            self._last_used = _clock()
            operation = qe.UpdateOperation.upsert_points(
                [qe.Point(p.id, list(p.vector), dict(p.payload)) for p in points]
            )
            self._vector_cache.forget(name, (p.id for p in points))
            edge_engine.writable_or_unavailable(self._collection_path(name))
            try:
                # Synchronous: applied and written to the shard's WAL when it returns.
                shard.update(operation)
            except Exception as exc:
                raise edge_engine.engine_error(self.path, exc) from exc

    def search(
        self,
        name: str,
        vector: list[float],
        *,
        limit: int,
        score_threshold: float | None = None,
        filters: Filters | None = None,
        payload_fields: list[str] | None = None,
        with_vectors: bool = False,
    ) -> list[VectorHit]:
        """The nearest points; ``payload_fields`` (None: all) and their vectors on request.

        Only the fields a caller reads are copied out of the engine, and vectors
        asked with the hits spare a second read of the same points.
        """
        import qdrant_edge as qe

        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return []
            expected = self._dimensions[name]
            if len(vector) != expected:
                raise DimensionMismatch(
                    DIMENSION_MISMATCH_MESSAGE.format(
                        name=name, existing=expected, expected=len(vector)
                    )
                )
            check_embedder(name, self._embedders.get(name))
            self._last_used = _clock()
            request = qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(list(vector)),
                filter=edge_engine.edge_filter(filters),
                score_threshold=score_threshold,
                with_payload=True if payload_fields is None else list(payload_fields),
                with_vector=with_vectors,
                params=edge_engine.edge_search_params(),
            )
            try:
                points = shard.query(request)
            except Exception as exc:
                raise edge_engine.engine_error(self.path, exc) from exc
        return [scored_hit(p, with_vectors=with_vectors, floats=True) for p in points]

    def delete(self, name: str, ids: list[str]) -> None:
        if not ids:
            return
        import qdrant_edge as qe

        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return
            self._last_used = _clock()
            self._vector_cache.forget(name, ids)
            edge_engine.writable_or_unavailable(self._collection_path(name))
            try:
                shard.update(qe.UpdateOperation.delete_points(list(ids)))
            except Exception as exc:
                raise edge_engine.engine_error(self.path, exc) from exc

    def retrieve(
        self, name: str, ids: list[str], *, with_vectors: bool = False, with_payload: bool = True
    ) -> list[VectorHit]:
        """Points by id; ``with_payload`` False: the vectors alone (a payload is copied out
        of the engine whole, texts included)."""
        if not ids:
            return []
        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return []
            self._last_used = _clock()
            try:
                records = shard.retrieve(
                    list(ids), with_payload=with_payload, with_vector=with_vectors
                )
            except Exception as exc:
                raise edge_engine.engine_error(self.path, exc) from exc
        return [stored_hit(r, with_vectors=with_vectors, floats=True) for r in records]

    def vectors(self, name: str, ids: list[str]) -> dict[str, Any]:
        """The stored vectors of those ``ids`` the collection holds (read-only float64
        arrays), kept in the process between reads (memory.stores.vector_cache)."""
        if not ids:
            return {}
        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return {}
            self._last_used = _clock()
            found, missing = self._vector_cache.found(name, ids)
            if missing:
                try:
                    records = shard.retrieve(missing, with_payload=False, with_vector=True)
                except Exception as exc:
                    raise edge_engine.engine_error(self.path, exc) from exc
                for record in records:
                    vector = plain_vector(record.vector, floats=True)
                    if vector is not None:
                        point = str(record.id)
                        found[point] = self._vector_cache.keep(name, point, vector)
        return found

    def count(self, name: str) -> int:
        import qdrant_edge as qe

        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return 0
            try:
                return int(shard.count(qe.CountRequest(exact=True)))
            except Exception as exc:
                raise edge_engine.engine_error(self.path, exc) from exc

    def iter_ids(self, name: str) -> Iterator[str]:
        import qdrant_edge as qe

        offset: Any = None
        while True:
            # The lock is held per page, not across the generator's life.
            with self._lock:
                shard = self._shard(name)
                if shard is None:
                    return
                try:
                    records, offset = shard.scroll(
                        qe.ScrollRequest(
                            offset=offset,
                            limit=SCROLL_PAGE,
                            with_payload=False,
                            with_vector=False,
                        )
                    )
                except Exception as exc:
                    raise edge_engine.engine_error(self.path, exc) from exc
            for record in records:
                yield str(record.id)
            if offset is None:
                return

    def drop_collection(self, name: str) -> None:
        with self._lock:
            self._check_open()
            shard = self._shards.pop(name, None)
            self._dimensions.pop(name, None)
            self._embedders.pop(name, None)
            self._vector_cache.forget_collection(name)
            if shard is not None:
                with contextlib.suppress(Exception):
                    shard.close()
            path = self._collection_path(name)
            if path.exists():
                shutil.rmtree(path)

    def rewrite(self, name: str) -> int | None:
        """Write ``name`` anew with its current points only, so that its folder keeps no
        byte of the deleted ones (after an erasure; memory.stores.edge_rewrite): the points
        copied, None without such a collection. Holds the store for the whole copy."""
        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return None
            path = self._collection_path(name)
            self._last_used = _clock()
            edge_engine.writable_or_unavailable(path)  # its flush writes through the maps
            try:
                copied = edge_rewrite.shard_copy(
                    shard, path, self._dimensions[name], self._embedders[name]
                )
                shard.flush()
                # Closed before its folder moves aside; the next read loads the new one.
                self._shards.pop(name)
                self._vector_cache.forget_collection(name)
                shard.close()
                edge_rewrite.folder_swap(path)
            except Exception as exc:
                edge_rewrite.folder_recover(path)  # the old one, or the new one if complete
                raise edge_engine.engine_error(self.path, exc) from exc
            self._shard(name)
        logger.info("Qdrant Edge collection %s rewritten (%d points)", name, copied)
        return copied

    def collection_dimension(self, name: str) -> int | None:
        with self._lock:
            self._check_open()
            if name in self._dimensions:
                return self._dimensions[name]
            return edge_engine.folder_dimension(self._collection_path(name))

    def collection_embedder(self, name: str) -> str | None:
        """The embedder that filled ``name`` (None: no such collection): collection_record's."""
        record = self.collection_record(name)
        return record[1] if record is not None else None

    def collection_record(self, name: str) -> tuple[int, str] | None:
        """(dimension, the embedder that filled ``name``); None: no such collection."""
        with self._lock:
            if self._shard(name) is None:
                return None
            return self._dimensions[name], self._embedders[name]

    def optimize(self, *, min_unindexed: int = 0, quiet_s: float = 0.0) -> dict[str, int]:
        """Build the search (HNSW) index of the collections with at least ``min_unindexed``
        points outside it, or indexed segments without the int8 copy (edge_engine.
        shard_optimize: blocking, for seconds at 100k points); {collection: points
        built}. Not within ``quiet_s`` seconds of a search, read or write: call it at
        start, after a reindex or a bulk load, or from the periodic upkeep, never on a
        request.
        """
        optimized: dict[str, int] = {}
        with self._lock:
            if quiet_s and _clock() - self._last_used < quiet_s:
                return optimized  # in use lately: building now would hold it up
            for name in COLLECTIONS:
                shard = self._shard(name)
                if shard is None:
                    continue
                try:
                    built = edge_engine.shard_optimize(
                        shard, self._collection_path(name), min_unindexed
                    )
                except Exception as exc:
                    raise edge_engine.engine_error(self.path, exc) from exc
                if built is not None:
                    optimized[name] = built
        if optimized:
            logger.info("Qdrant Edge search index built: %s", optimized)
        return optimized

    def flush(self) -> None:
        with self._lock:
            for name, shard in self._shards.items():
                edge_engine.writable_or_unavailable(self._collection_path(name))
                try:
                    shard.flush()
                except Exception as exc:
                    raise edge_engine.engine_error(self.path, exc) from exc

    def close(self) -> None:
        """Flush and close every shard, then release the folder. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for name, shard in list(self._shards.items()):
                try:
                    edge_engine.writable_or_unavailable(self._collection_path(name))
                except StoreUnavailable as exc:
                    # Its flush, or its close's, would fault on the read-only maps (SIGBUS:
                    # review): left open, unflushed, held until the process ends. What it
                    # had not written is in T1, and indexed again at the next start.
                    logger.error("Qdrant Edge collection %s not closed: %s", name, exc)
                    _UNCLOSED.append(shard)
                    continue
                try:
                    shard.flush()
                    shard.close()
                except Exception:
                    logger.exception("Closing Qdrant Edge collection %s failed", name)
            self._shards.clear()
            self._dimensions.clear()
            self._embedders.clear()
            self._vector_cache.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None
