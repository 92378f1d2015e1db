"""The T2 vector store: Qdrant, embedded (Qdrant Edge) or a server (qdrant-client).

Two collections, created on demand with the embedder's dimension and cosine
distance: ``conversations`` (exchanges) and ``knowledge`` (summaries and facts).
Point ids are deterministic (``point_id``), so indexing a row twice overwrites its
point instead of adding one. Writes return once Qdrant has applied them.

- ``EdgeVectorStore``: Qdrant's own Rust engine in process (``qdrant-edge-py``),
  one shard folder per collection under ``QDRANT_PATH``. ONE process owns the
  folder: a lock file is taken on open and a second opener gets
  ``StoreUnavailable`` naming the folder.
- ``ServerVectorStore``: a Qdrant server or cluster through ``qdrant-client`` when
  ``QDRANT_URL`` is set.

Both engines are imported inside functions only (see tests/memory/test_embedders.py,
the lazy-import test).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memory.exceptions import DimensionMismatch, StoreUnavailable

logger = logging.getLogger(__name__)

CONVERSATIONS = "conversations"
KNOWLEDGE = "knowledge"
# One point per message of an observed room, until the digest reads it.
LIVE = "live"
COLLECTIONS = (CONVERSATIONS, KNOWLEDGE, LIVE)
# The owner's points of ``knowledge``: the agent's self and goals (types "self" and
# "goal") share the collection and are searched by their own tools only.
OWNER_KNOWLEDGE = {"type": ["fact", "summary"]}
# Segments above this size (KB) get a search index when optimized; None: Qdrant's
# default (about 6,000 vectors of 384 dimensions). Tests lower it.
EDGE_INDEXING_THRESHOLD_KB: int | None = None

# Fixed forever: changing it would orphan every stored point.
POINT_ID_NAMESPACE = uuid.UUID("8a6f2b7e-3c1d-5e4f-9a0b-6d7c8e9f0a1b")

# Payload fields that filters use: keyword indexes. ``timestamp`` holds an ISO 8601
# string with its offset ("2026-01-10T08:30:00+00:00"): a datetime index.
KEYWORD_FIELDS = ("channel", "type", "key", "memory_type")
DATETIME_FIELDS = ("timestamp",)

SCROLL_PAGE = 256
EDGE_LOCK_FILE = ".makilab.lock"
EDGE_CONFIG_FILE = "edge_config.json"

DIMENSION_MISMATCH_MESSAGE = (
    "La collection Qdrant « {name} » contient des vecteurs de dimension {existing}, "
    "mais l'embedder actuel produit des vecteurs de dimension {expected} (l'embedder a "
    "changé ?). Lancez `python manage.py reindex --recreate` pour reconstruire l'index."
)
VECTOR_DIMENSION_MESSAGE = (
    "Vecteur de dimension {got} pour la collection « {name} » de dimension {expected}. "
    "Lancez `python manage.py reindex --recreate` si l'embedder a changé."
)
EDGE_LOCKED_MESSAGE = (
    "Le dossier Qdrant {path} est déjà ouvert par un autre processus : la base "
    "vectorielle embarquée n'a qu'un propriétaire. Arrêtez l'autre processus, ou "
    "configurez QDRANT_URL pour partager un serveur Qdrant."
)
EDGE_ERROR_MESSAGE = "Qdrant embarqué ({path}) : {detail}"
STORE_CLOSED_MESSAGE = "La base vectorielle est fermée."
SERVER_UNREACHABLE_MESSAGE = "Serveur Qdrant injoignable ({url}) : {detail}"
SERVER_ERROR_MESSAGE = "Le serveur Qdrant ({url}) a répondu une erreur : {detail}"


def _plain_vector(vector: Any, *, floats: bool = False) -> list[float] | None:
    """A stored vector as a list of floats (engines return a list or a {name: list} map).

    ``floats``: the engine already gives a new list of Python floats (Qdrant Edge
    builds one from its f32 on every access), kept as it is: converting 64
    vectors of 384 numbers again cost ~0.6 ms after every query embedding.
    """
    if vector is None:
        return None
    if isinstance(vector, dict):
        vector = next(iter(vector.values()), None)
        if vector is None:
            return None
    if floats and type(vector) is list:
        return vector
    return list(map(float, vector))


def _scored_hit(point: Any, *, with_vectors: bool, floats: bool = False) -> VectorHit:
    """A search result of either engine (id, score, payload, vector) as a VectorHit."""
    return VectorHit(
        str(point.id),
        float(point.score),
        dict(point.payload or {}),
        _plain_vector(point.vector, floats=floats) if with_vectors else None,
    )


def point_id(kind: str, row_id: int) -> str:
    """The Qdrant point id of a row: uuid5 of a fixed namespace and ``"kind:row_id"``."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{kind}:{row_id}"))


@dataclass(frozen=True)
class VectorPoint:
    id: str
    vector: list[float]
    payload: dict = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    id: str
    score: float
    payload: dict = field(default_factory=dict)
    # Only filled by search/retrieve(..., with_vectors=True).
    vector: list[float] | None = None


Filters = dict[str, str | list[str]]


@runtime_checkable
class VectorStore(Protocol):
    def ensure_collection(self, name: str, dimension: int) -> None: ...

    def upsert(self, name: str, points: list[VectorPoint]) -> None: ...

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
    ) -> list[VectorHit]: ...

    def delete(self, name: str, ids: list[str]) -> None: ...

    def retrieve(
        self, name: str, ids: list[str], *, with_vectors: bool = False
    ) -> list[VectorHit]: ...

    def count(self, name: str) -> int: ...

    def iter_ids(self, name: str) -> Iterator[str]: ...

    def drop_collection(self, name: str) -> None: ...

    def collection_dimension(self, name: str) -> int | None: ...

    def optimize(self, *, min_unindexed: int = 0) -> dict[str, int]: ...

    def close(self) -> None: ...


def _check_vectors(name: str, points: list[VectorPoint], dimension: int) -> None:
    for point in points:
        if len(point.vector) != dimension:
            raise DimensionMismatch(
                VECTOR_DIMENSION_MESSAGE.format(
                    got=len(point.vector), name=name, expected=dimension
                )
            )
        if not all(math.isfinite(x) for x in point.vector):
            # Qdrant would store a NaN and poison every later search.
            raise ValueError(f"non-finite vector for point {point.id} in {name}")


# --- Qdrant Edge (embedded) ---------------------------------------------------------


class EdgeVectorStore:
    """Qdrant Edge shards in ``path/<collection>/``; thread-safe; one owner process."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._shards: dict[str, Any] = {}
        self._dimensions: dict[str, int] = {}
        self._closed = False
        self._lock_fd: int | None = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(EDGE_ERROR_MESSAGE.format(path=self.path, detail=exc)) from exc
        self._acquire_folder_lock()

    def __repr__(self) -> str:
        return f"<EdgeVectorStore {self.path}>"

    def _acquire_folder_lock(self) -> None:
        import fcntl

        # Our own lock on top of the WAL's: it covers every collection of the folder,
        # including those not opened yet, and it is released by the kernel if the
        # process dies, so a crash never leaves a stale lock behind.
        fd = os.open(self.path / EDGE_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise StoreUnavailable(EDGE_LOCKED_MESSAGE.format(path=self.path)) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def _collection_path(self, name: str) -> Path:
        if name not in COLLECTIONS and (not name.isidentifier() or name.startswith("_")):
            raise ValueError(f"invalid collection name: {name!r}")
        return self.path / name

    def _error(self, exc: BaseException) -> StoreUnavailable:
        detail = str(exc)
        if "WouldBlock" in detail or "lock" in detail.lower():
            return StoreUnavailable(EDGE_LOCKED_MESSAGE.format(path=self.path))
        return StoreUnavailable(EDGE_ERROR_MESSAGE.format(path=self.path, detail=detail))

    def _check_open(self) -> None:
        if self._closed:
            raise StoreUnavailable(STORE_CLOSED_MESSAGE)

    def _read_dimension(self, name: str) -> int | None:
        config_file = self._collection_path(name) / EDGE_CONFIG_FILE
        try:
            config = json.loads(config_file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StoreUnavailable(
                EDGE_ERROR_MESSAGE.format(
                    path=config_file, detail=f"configuration illisible: {exc}"
                )
            ) from exc
        return int(config["vectors"][""]["size"])

    def _shard(self, name: str) -> Any | None:
        """The open shard of ``name``, loading it from disk if needed; None if absent."""
        self._check_open()
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        dimension = self._read_dimension(name)
        if dimension is None:
            return None
        from qdrant_edge import EdgeShard

        try:
            shard = EdgeShard.load(str(self._collection_path(name)))
        except Exception as exc:  # the binding raises bare Exception
            raise self._error(exc) from exc
        self._shards[name] = shard
        self._dimensions[name] = dimension
        return shard

    def ensure_collection(self, name: str, dimension: int) -> None:
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
                self._ensure_indexes(shard)
                return
            import qdrant_edge as qe

            path = self._collection_path(name)
            if path.exists():
                # A folder without edge_config.json: a creation interrupted by a
                # crash. Nothing in it is readable; start again.
                shutil.rmtree(path)
            optimizers = (
                qe.EdgeOptimizersConfig(indexing_threshold=EDGE_INDEXING_THRESHOLD_KB)
                if EDGE_INDEXING_THRESHOLD_KB is not None
                else None
            )
            config = qe.EdgeConfig(
                vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine),
                optimizers=optimizers,
            )
            try:
                shard = qe.EdgeShard.create(str(path), config)
            except Exception as exc:
                raise self._error(exc) from exc
            self._shards[name] = shard
            self._dimensions[name] = dimension
            self._ensure_indexes(shard)
            logger.info("Created Qdrant Edge collection %s (%d dims) in %s", name, dimension, path)

    def _ensure_indexes(self, shard: Any) -> None:
        import qdrant_edge as qe

        try:
            existing = set(shard.info().payload_schema)
            for field_name in KEYWORD_FIELDS:
                if field_name not in existing:
                    shard.update(
                        qe.UpdateOperation.create_field_index(
                            field_name, qe.PayloadSchemaType.Keyword
                        )
                    )
            for field_name in DATETIME_FIELDS:
                if field_name not in existing:
                    shard.update(
                        qe.UpdateOperation.create_field_index(
                            field_name, qe.PayloadSchemaType.Datetime
                        )
                    )
        except Exception as exc:
            raise self._error(exc) from exc

    def upsert(self, name: str, points: list[VectorPoint]) -> None:
        if not points:
            return
        import qdrant_edge as qe

        with self._lock:
            if self._shard(name) is None:
                self.ensure_collection(name, len(points[0].vector))
            shard = self._shards[name]
            _check_vectors(name, points, self._dimensions[name])
            operation = qe.UpdateOperation.upsert_points(
                [qe.Point(p.id, list(p.vector), dict(p.payload)) for p in points]
            )
            try:
                # Synchronous: applied and written to the shard's WAL when it returns.
                shard.update(operation)
            except Exception as exc:
                raise self._error(exc) from exc

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
            request = qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(list(vector)),
                filter=_edge_filter(filters),
                score_threshold=score_threshold,
                with_payload=True if payload_fields is None else list(payload_fields),
                with_vector=with_vectors,
            )
            try:
                points = shard.query(request)
            except Exception as exc:
                raise self._error(exc) from exc
        return [_scored_hit(p, with_vectors=with_vectors, floats=True) for p in points]

    def delete(self, name: str, ids: list[str]) -> None:
        if not ids:
            return
        import qdrant_edge as qe

        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return
            try:
                shard.update(qe.UpdateOperation.delete_points(list(ids)))
            except Exception as exc:
                raise self._error(exc) from exc

    def retrieve(self, name: str, ids: list[str], *, with_vectors: bool = False) -> list[VectorHit]:
        if not ids:
            return []
        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return []
            try:
                records = shard.retrieve(list(ids), with_payload=True, with_vector=with_vectors)
            except Exception as exc:
                raise self._error(exc) from exc
        return [
            VectorHit(
                str(r.id),
                1.0,
                dict(r.payload or {}),
                _plain_vector(r.vector) if with_vectors else None,
            )
            for r in records
        ]

    def count(self, name: str) -> int:
        import qdrant_edge as qe

        with self._lock:
            shard = self._shard(name)
            if shard is None:
                return 0
            try:
                return int(shard.count(qe.CountRequest(exact=True)))
            except Exception as exc:
                raise self._error(exc) from exc

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
                    raise self._error(exc) from exc
            for record in records:
                yield str(record.id)
            if offset is None:
                return

    def drop_collection(self, name: str) -> None:
        with self._lock:
            self._check_open()
            shard = self._shards.pop(name, None)
            self._dimensions.pop(name, None)
            if shard is not None:
                with contextlib.suppress(Exception):
                    shard.close()
            path = self._collection_path(name)
            if path.exists():
                shutil.rmtree(path)

    def collection_dimension(self, name: str) -> int | None:
        with self._lock:
            self._check_open()
            if name in self._dimensions:
                return self._dimensions[name]
            return self._read_dimension(name)

    def optimize(self, *, min_unindexed: int = 0) -> dict[str, int]:
        """Build the search (HNSW) index of collections holding unindexed points.

        Qdrant Edge never optimizes by itself: without this every search is an
        exact scan, whose cost grows with the collection (×5 from 10k to 100k
        points). Blocking, and the binding holds the GIL while it runs (seconds
        at 100k points): call it at start, after a reindex or a bulk load, never
        on a request. Only collections with at least ``min_unindexed`` points
        outside the index are rebuilt. Returns {collection: points that were
        outside the index} for those it built an index for.
        """
        optimized: dict[str, int] = {}
        with self._lock:
            for name in COLLECTIONS:
                shard = self._shard(name)
                if shard is None:
                    continue
                try:
                    info = shard.info()
                    outside = info.points_count - info.indexed_vectors_count
                    if outside < max(1, min_unindexed):
                        continue
                    # False: nothing to build (a segment below the indexing threshold).
                    built = shard.optimize()
                except Exception as exc:
                    raise self._error(exc) from exc
                if built:
                    optimized[name] = outside
        if optimized:
            logger.info("Qdrant Edge search index built: %s", optimized)
        return optimized

    def flush(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                try:
                    shard.flush()
                except Exception as exc:
                    raise self._error(exc) from exc

    def close(self) -> None:
        """Flush and close every shard, then release the folder. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for name, shard in list(self._shards.items()):
                try:
                    shard.flush()
                    shard.close()
                except Exception:
                    logger.exception("Closing Qdrant Edge collection %s failed", name)
            self._shards.clear()
            self._dimensions.clear()
            if self._lock_fd is not None:
                os.close(self._lock_fd)  # releases the flock
                self._lock_fd = None


def _edge_filter(filters: Filters | None) -> Any:
    """The engine's filter for ``filters``; built once per distinct filter (the knowledge
    search of every auto-retrieval asks the same one)."""
    if not filters:
        return None
    key = tuple(
        (name, tuple(value) if isinstance(value, (list, tuple, set)) else value)
        for name, value in sorted(filters.items())
    )
    return _edge_filter_built(key)


@functools.lru_cache(maxsize=64)
def _edge_filter_built(key: tuple) -> Any:
    import qdrant_edge as qe

    conditions = []
    for name, value in key:
        match = qe.MatchAny(list(value)) if isinstance(value, tuple) else qe.MatchValue(value)
        conditions.append(qe.FieldCondition(name, match=match))
    return qe.Filter(must=conditions)


# --- Qdrant server (qdrant-client) ----------------------------------------------------


class _CollectionGone(Exception):
    """The server no longer has a collection this process knew: dropped elsewhere
    (e.g. `reindex --recreate` run from another process)."""


class ServerVectorStore:
    """A Qdrant server through qdrant-client (REST). ``client`` may be given (tests)."""

    def __init__(
        self,
        url: str = "",
        api_key: str = "",
        timeout: float = 5.0,
        *,
        client: Any = None,
    ) -> None:
        self.url = url or "(client fourni)"
        self._dimensions: dict[str, int] = {}
        self._closed = False
        if client is None:
            from qdrant_client import QdrantClient

            client = QdrantClient(
                url=url,
                api_key=api_key or None,
                timeout=max(1, math.ceil(timeout)),
                # No request at construction: a server that is down must not break
                # the process start, only the calls that need it.
                check_compatibility=False,
            )
        self.client = client

    def __repr__(self) -> str:
        return f"<ServerVectorStore {self.url}>"

    @contextlib.contextmanager
    def _errors(self, name: str | None = None) -> Iterator[None]:
        """Map qdrant-client's errors to ours. With ``name``, a missing collection
        raises ``_CollectionGone`` and its cached dimension is forgotten."""
        if self._closed:
            raise StoreUnavailable(STORE_CLOSED_MESSAGE)
        import httpx
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        try:
            yield
        except ResponseHandlingException as exc:
            raise StoreUnavailable(
                SERVER_UNREACHABLE_MESSAGE.format(url=self.url, detail=exc.source or exc)
            ) from exc
        except (httpx.TransportError, ConnectionError, TimeoutError) as exc:
            raise StoreUnavailable(
                SERVER_UNREACHABLE_MESSAGE.format(url=self.url, detail=exc)
            ) from exc
        except UnexpectedResponse as exc:
            if name is not None and exc.status_code == 404:
                self._dimensions.pop(name, None)
                raise _CollectionGone(name) from exc
            detail = f"HTTP {exc.status_code} {exc.content[:200]!r}"
            raise StoreUnavailable(
                SERVER_ERROR_MESSAGE.format(url=self.url, detail=detail)
            ) from exc
        except ValueError as exc:  # qdrant-client's local mode says it this way
            if name is not None and "not found" in str(exc):
                self._dimensions.pop(name, None)
                raise _CollectionGone(name) from exc
            raise

    def collection_dimension(self, name: str) -> int | None:
        with self._errors():
            exists = bool(self.client.collection_exists(name))
        if not exists:
            self._dimensions.pop(name, None)
            return None
        try:
            with self._errors(name):
                info = self.client.get_collection(name)
        except _CollectionGone:
            return None
        vectors = info.config.params.vectors
        if isinstance(vectors, dict):  # named vectors: ours use the unnamed default
            vectors = vectors.get("") or next(iter(vectors.values()))
        return int(vectors.size)

    def ensure_collection(self, name: str, dimension: int) -> None:
        from qdrant_client import models
        from qdrant_client.http.exceptions import UnexpectedResponse

        existing = self.collection_dimension(name)
        if existing is None:
            with self._errors():
                try:
                    self.client.create_collection(
                        name,
                        vectors_config=models.VectorParams(
                            size=dimension, distance=models.Distance.COSINE
                        ),
                    )
                except UnexpectedResponse as exc:
                    if exc.status_code != 409:  # 409: created meanwhile by another worker
                        raise
                except ValueError as exc:  # the same race in qdrant-client's local mode
                    if "already exists" not in str(exc):
                        raise
            self._create_indexes(name)
            existing = self.collection_dimension(name)
        if existing != dimension:
            raise DimensionMismatch(
                DIMENSION_MISMATCH_MESSAGE.format(name=name, existing=existing, expected=dimension)
            )
        self._dimensions[name] = dimension

    def _create_indexes(self, name: str) -> None:
        import warnings

        from qdrant_client import models

        schemas = [(f, models.PayloadSchemaType.KEYWORD) for f in KEYWORD_FIELDS]
        schemas += [(f, models.PayloadSchemaType.DATETIME) for f in DATETIME_FIELDS]
        with self._errors(), warnings.catch_warnings():
            # The local mode warns that payload indexes have no effect there.
            warnings.simplefilter("ignore")
            for field_name, schema in schemas:
                self.client.create_payload_index(name, field_name, field_schema=schema, wait=True)

    def _dimension(self, name: str) -> int | None:
        """The collection's dimension, cached per process; None when it does not exist."""
        if name not in self._dimensions:
            dimension = self.collection_dimension(name)
            if dimension is None:
                return None
            self._dimensions[name] = dimension
        return self._dimensions[name]

    def upsert(self, name: str, points: list[VectorPoint]) -> None:
        if not points:
            return
        from qdrant_client import models

        dimension = self._dimension(name)
        if dimension is None:
            dimension = len(points[0].vector)
            self.ensure_collection(name, dimension)
        _check_vectors(name, points, dimension)
        structs = [
            models.PointStruct(id=p.id, vector=list(p.vector), payload=dict(p.payload))
            for p in points
        ]
        try:
            with self._errors(name):
                self.client.upsert(name, points=structs, wait=True)
        except _CollectionGone:
            self.ensure_collection(name, dimension)
            with self._errors():
                self.client.upsert(name, points=structs, wait=True)

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
        dimension = self._dimension(name)
        if dimension is None:
            return []
        if len(vector) != dimension:
            raise DimensionMismatch(
                DIMENSION_MISMATCH_MESSAGE.format(
                    name=name, existing=dimension, expected=len(vector)
                )
            )
        try:
            with self._errors(name):
                response = self.client.query_points(
                    name,
                    query=list(vector),
                    limit=limit,
                    score_threshold=score_threshold,
                    query_filter=_server_filter(filters),
                    with_payload=True if payload_fields is None else list(payload_fields),
                    with_vectors=with_vectors,
                )
        except _CollectionGone:
            return []
        return [_scored_hit(p, with_vectors=with_vectors) for p in response.points]

    def delete(self, name: str, ids: list[str]) -> None:
        if not ids or self._dimension(name) is None:
            return
        from qdrant_client import models

        with contextlib.suppress(_CollectionGone), self._errors(name):
            self.client.delete(
                name, points_selector=models.PointIdsList(points=list(ids)), wait=True
            )

    def retrieve(self, name: str, ids: list[str], *, with_vectors: bool = False) -> list[VectorHit]:
        if not ids or self._dimension(name) is None:
            return []
        try:
            with self._errors(name):
                records = self.client.retrieve(
                    name, ids=list(ids), with_payload=True, with_vectors=with_vectors
                )
        except _CollectionGone:
            return []
        return [
            VectorHit(
                str(r.id),
                1.0,
                dict(r.payload or {}),
                _plain_vector(r.vector) if with_vectors else None,
            )
            for r in records
        ]

    def count(self, name: str) -> int:
        if self._dimension(name) is None:
            return 0
        try:
            with self._errors(name):
                return int(self.client.count(name, exact=True).count)
        except _CollectionGone:
            return 0

    def iter_ids(self, name: str) -> Iterator[str]:
        if self._dimension(name) is None:
            return
        offset: Any = None
        while True:
            try:
                with self._errors(name):
                    records, offset = self.client.scroll(
                        name,
                        limit=SCROLL_PAGE,
                        offset=offset,
                        with_payload=False,
                        with_vectors=False,
                    )
            except _CollectionGone:
                return
            for record in records:
                yield str(record.id)
            if offset is None:
                return

    def drop_collection(self, name: str) -> None:
        self._dimensions.pop(name, None)
        with self._errors():
            self.client.delete_collection(name)

    def optimize(self, *, min_unindexed: int = 0) -> dict[str, int]:
        """A Qdrant server builds its indexes itself, in the background."""
        return {}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.client.close()


def _server_filter(filters: Filters | None) -> Any:
    if not filters:
        return None
    from qdrant_client import models

    conditions = []
    for key, value in filters.items():
        if isinstance(value, (list, tuple, set)):
            match: Any = models.MatchAny(any=list(value))
        else:
            match = models.MatchValue(value=value)
        conditions.append(models.FieldCondition(key=key, match=match))
    return models.Filter(must=conditions)


# --- The process-wide store ----------------------------------------------------------------

_store: VectorStore | None = None
_store_lock = threading.Lock()


def vector_store_from_settings() -> VectorStore:
    """A new store as settings ask: a server when QDRANT_URL is set, else embedded."""
    from django.conf import settings

    if settings.QDRANT_URL:
        return ServerVectorStore(
            settings.QDRANT_URL, settings.QDRANT_API_KEY, settings.QDRANT_TIMEOUT_S
        )
    return EdgeVectorStore(settings.QDRANT_PATH)


def get_vector_store() -> VectorStore:
    """The process-wide store, opened on first use and shared by every thread."""
    global _store
    if _store is None:
        with _store_lock:
            if _store is None:
                _store = vector_store_from_settings()
    return _store


def vector_store_reset() -> None:
    """Close the process-wide store (tests, shutdown); the next call reopens it."""
    global _store
    with _store_lock:
        store, _store = _store, None
    if store is not None:
        store.close()
