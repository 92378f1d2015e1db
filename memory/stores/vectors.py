"""The T2 vector store: Qdrant, embedded (Qdrant Edge) or a server (qdrant-client).

Two collections, created on demand with the embedder's dimension and cosine
distance: ``conversations`` (exchanges) and ``knowledge`` (summaries and facts).
Point ids are deterministic (``point_id``), so indexing a row twice overwrites its
point instead of adding one. Writes return once Qdrant has applied them.

- ``EdgeVectorStore`` (memory.stores.vectors_edge): Qdrant's own Rust engine in
  process (``qdrant-edge-py``), one shard folder per collection under
  ``QDRANT_PATH``. ONE process owns the folder: a lock file is taken on open and a
  second opener gets ``StoreUnavailable`` naming the folder.
- ``ServerVectorStore`` (memory.stores.vectors_server): a Qdrant server or cluster
  through ``qdrant-client`` when ``QDRANT_URL`` is set.

This module holds what both share (collections, point ids, hits, the protocol)
and the process-wide store (``get_vector_store``).

Both engines are imported inside functions only (see tests/memory/test_embedders.py,
the lazy-import test).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memory.exceptions import DimensionMismatch, EmbedderMismatch

logger = logging.getLogger(__name__)

CONVERSATIONS = "conversations"
KNOWLEDGE = "knowledge"
# One point per message of an observed room, until the digest reads it.
LIVE = "live"
COLLECTIONS = (CONVERSATIONS, KNOWLEDGE, LIVE)
# The owner's points of ``knowledge``: the agent's self and goals (types "self" and
# "goal") share the collection and are searched by their own tools only.
OWNER_KNOWLEDGE = {"type": ["fact", "summary"]}

# Every collection keeps an int8 copy of its vectors in RAM (scalar quantization, built
# with its search index), embedded or on a server: a search walks the index on the
# copy, takes INT8_OVERSAMPLING times the hits asked, and ranks them again on the
# stored vectors, so the scores are the exact cosines. On the 100k benchmark (Qdrant
# Edge), built the same way with and without it: a search p50 0.77-1.03 -> 0.32-0.34
# ms at recall@16 0.936 -> 0.941 against exact search (taking only the hits asked:
# 0.864); the pre-hook's Qdrant stage 3.5-3.7 -> 2.2 ms.
INT8_QUANTILE = 0.99
INT8_OVERSAMPLING = 2.0

# Fixed forever: changing it would orphan every stored point.
POINT_ID_NAMESPACE = uuid.UUID("8a6f2b7e-3c1d-5e4f-9a0b-6d7c8e9f0a1b")

# Payload fields that filters use: keyword indexes. ``timestamp`` holds an ISO 8601
# string with its offset ("2026-01-10T08:30:00+00:00"): a datetime index.
KEYWORD_FIELDS = ("channel", "type", "key", "memory_type")
DATETIME_FIELDS = ("timestamp",)

SCROLL_PAGE = 256

DIMENSION_MISMATCH_MESSAGE = (
    "La collection Qdrant « {name} » contient des vecteurs de dimension {existing}, "
    "mais l'embedder actuel produit des vecteurs de dimension {expected} (l'embedder a "
    "changé ?). Lancez `python manage.py reindex --recreate` pour reconstruire l'index."
)
VECTOR_DIMENSION_MESSAGE = (
    "Vecteur de dimension {got} pour la collection « {name} » de dimension {expected}. "
    "Lancez `python manage.py reindex --recreate` si l'embedder a changé."
)
EMBEDDER_MISMATCH_MESSAGE = (
    "La collection Qdrant « {name} » a été remplie par l'embedder {recorded}, mais "
    "l'embedder actuel est {current} : leurs vecteurs ne se comparent pas. Lancez "
    "`python manage.py reindex --recreate` pour reconstruire l'index."
)
STORE_CLOSED_MESSAGE = "La base vectorielle est fermée."
# Where a collection keeps the name of the embedder that filled it: metadata of a
# server's collection, a file in an Edge collection's folder.
EMBEDDER_KEY = "makilab_embedder"


def plain_vector(vector: Any, *, floats: bool = False) -> list[float] | None:
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


def scored_hit(point: Any, *, with_vectors: bool, floats: bool = False) -> VectorHit:
    """A search result of either engine (id, score, payload, vector) as a VectorHit."""
    return VectorHit(
        str(point.id),
        float(point.score),
        dict(point.payload or {}),
        plain_vector(point.vector, floats=floats) if with_vectors else None,
    )


def stored_hit(record: Any, *, with_vectors: bool, floats: bool = False) -> VectorHit:
    """A point read by id from either engine (id, payload, vector) as a VectorHit of score 1."""
    return VectorHit(
        str(record.id),
        1.0,
        dict(record.payload or {}),
        plain_vector(record.vector, floats=floats) if with_vectors else None,
    )


@functools.lru_cache(maxsize=32_768)
def point_id(kind: str, row_id: int) -> str:
    """The Qdrant point id of a row: uuid5 of a fixed namespace and ``"kind:row_id"``.
    Kept for the rows asked lately: the pre-hook's near-duplicate checks ask the same
    few dozen on every message (a SHA-1 each, 0.25 ms a message at 10,000 memories)."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{kind}:{row_id}"))


def part_point_id(kind: str, row_id: int, part: int) -> str:
    """The point of a row's ``part``-th passage (a long summary's: summary_parts), beside
    the row's own point_id."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{kind}:{row_id}:{part}"))


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
    def ensure_collection(
        self, name: str, dimension: int, *, embedder: str | None = None
    ) -> None: ...

    def upsert(
        self, name: str, points: list[VectorPoint], *, embedder: str | None = None
    ) -> None: ...

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
        self, name: str, ids: list[str], *, with_vectors: bool = False, with_payload: bool = True
    ) -> list[VectorHit]: ...

    def vectors(self, name: str, ids: list[str]) -> dict[str, Any]:
        """The stored vectors of those ``ids`` the collection holds (float64 arrays)."""
        ...

    def count(self, name: str) -> int: ...

    def iter_ids(self, name: str) -> Iterator[str]: ...

    def drop_collection(self, name: str) -> None: ...

    def rewrite(self, name: str) -> int | None:
        """Write ``name`` anew with its current points only, leaving no byte of the deleted
        ones on disk (after an erasure); the points copied, None when the store keeps no
        files of its own (a server) or has no such collection."""
        ...

    def collection_dimension(self, name: str) -> int | None: ...

    def collection_embedder(self, name: str) -> str | None: ...

    def collection_record(self, name: str) -> tuple[int, str] | None:
        """(dimension, the embedder that filled it) read together; None: no collection."""
        ...

    def optimize(self, *, min_unindexed: int = 0, quiet_s: float = 0.0) -> dict[str, int]: ...

    def close(self) -> None: ...


def current_embedder() -> str:
    """The name of the embedder in use (``Embedder.name``: the model, not its key)."""
    from memory.stores.embedders import get_embedder

    return get_embedder().name


def check_embedder(name: str, recorded: str | None, embedder: str | None = None) -> None:
    """Refuse to search or fill a collection that another embedder filled.

    Two models of the same vector size (voyage-3 and voyage-3.5) pass the dimension
    check, but their vectors live in different spaces: a cosine between them ranks
    noise. ``embedder``: the one that made the vectors at hand (default: the one in
    use). A collection without a record (None) has not been opened yet.
    """
    if recorded is None:
        return
    current = embedder or current_embedder()
    if recorded != current:
        raise EmbedderMismatch(
            EMBEDDER_MISMATCH_MESSAGE.format(name=name, recorded=recorded, current=current)
        )


def check_vectors(name: str, points: list[VectorPoint], dimension: int) -> None:
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


# --- The process-wide store ----------------------------------------------------------------

_store: VectorStore | None = None
_store_lock = threading.Lock()


def vector_store_from_settings() -> VectorStore:
    """A new store as settings ask: a server when QDRANT_URL is set, else embedded."""
    from django.conf import settings

    if settings.QDRANT_URL:
        from memory.stores.vectors_server import ServerVectorStore

        return ServerVectorStore(
            settings.QDRANT_URL, settings.QDRANT_API_KEY, settings.QDRANT_TIMEOUT_S
        )
    from memory.stores.vectors_edge import EdgeVectorStore

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
