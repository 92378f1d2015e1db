"""A Qdrant server or cluster as the vector store, through ``qdrant-client`` (``QDRANT_URL``).

The client is imported inside functions only (the lazy-import test in
tests/memory/test_embedders.py).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator
from typing import Any

from makilab.env import url_redacted
from memory.exceptions import DimensionMismatch, EmbedderMismatch, StoreUnavailable
from memory.stores import server_engine
from memory.stores.server_engine import CollectionGone
from memory.stores.vectors import (
    COLLECTIONS,
    DATETIME_FIELDS,
    DIMENSION_MISMATCH_MESSAGE,
    EMBEDDER_KEY,
    KEYWORD_FIELDS,
    SCROLL_PAGE,
    STORE_CLOSED_MESSAGE,
    Filters,
    VectorHit,
    VectorPoint,
    check_embedder,
    check_vectors,
    current_embedder,
    scored_hit,
    stored_hit,
)

logger = logging.getLogger(__name__)

# How long a search trusts the embedder record it read: another process may rebuild the
# collection for another model meanwhile (`reindex --recreate` beside serve).
RECORD_REFRESH_S = 30.0


def _clock() -> float:
    return time.monotonic()


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
        # Only the client gets the real URL: it may carry a password (http://user:pw@host).
        self.url = url_redacted(url) if url else "(client fourni)"
        self._secrets = server_engine.url_secrets(url)
        self._dimensions: dict[str, int] = {}
        self._embedders: dict[str, str] = {}  # the embedder that filled each collection
        self._record_read: dict[str, float] = {}  # _clock() when each record was read
        self._int8_checked: set[str] = set()  # collections known to have the int8 copy
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
        raises ``CollectionGone`` and its cached dimension is forgotten."""
        if self._closed:
            raise StoreUnavailable(STORE_CLOSED_MESSAGE)
        try:
            with server_engine.client_errors(self.url, self._secrets, name):
                yield
        except CollectionGone:
            self._dimensions.pop(name, None)
            self._embedders.pop(name, None)
            raise

    def collection_dimension(self, name: str) -> int | None:
        with self._errors():
            exists = bool(self.client.collection_exists(name))
        if not exists:
            self._dimensions.pop(name, None)
            self._embedders.pop(name, None)
            return None
        try:
            with self._errors(name):
                info = self.client.get_collection(name)
        except CollectionGone:
            return None
        recorded = (info.config.metadata or {}).get(EMBEDDER_KEY)
        if recorded is None:
            # A collection from before the record: the embedder in use adopts it.
            recorded = current_embedder()
            with contextlib.suppress(CollectionGone), self._errors(name):
                self.client.update_collection(name, metadata={EMBEDDER_KEY: recorded})
            logger.info("Qdrant collection %s recorded as filled by %s", name, recorded)
        self._embedders[name] = str(recorded)
        self._record_read[name] = _clock()
        vectors = info.config.params.vectors
        if isinstance(vectors, dict):  # named vectors: ours use the unnamed default
            vectors = vectors.get("") or next(iter(vectors.values()))
        return int(vectors.size)

    def ensure_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create ``name`` if missing, recorded as filled by ``embedder`` (default: the one
        in use); an existing one must have the dimension and the embedder."""
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
                        quantization_config=server_engine.int8_copy(),
                        metadata={EMBEDDER_KEY: embedder or current_embedder()},
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
        check_embedder(name, self._embedders.get(name), embedder)
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

    def _check_record(self, name: str) -> None:
        """The embedder check of a search, on a record read within RECORD_REFRESH_S, and read
        again before a refusal: the collection may have been rebuilt elsewhere since."""
        fresh = _clock() - self._record_read.get(name, float("-inf")) <= RECORD_REFRESH_S
        if not fresh:
            self.collection_dimension(name)
        try:
            check_embedder(name, self._embedders.get(name))
        except EmbedderMismatch:
            if not fresh:
                raise
            self.collection_dimension(name)
            check_embedder(name, self._embedders.get(name))

    def collection_embedder(self, name: str) -> str | None:
        """The embedder that filled ``name`` (None: no such collection): collection_record's."""
        record = self.collection_record(name)
        return record[1] if record is not None else None

    def collection_record(self, name: str) -> tuple[int, str] | None:
        """(dimension, the embedder that filled ``name``), from one read of the collection;
        None: no such collection."""
        dimension = self.collection_dimension(name)
        if dimension is None:
            return None
        return dimension, self._embedders[name]

    def upsert(self, name: str, points: list[VectorPoint], *, embedder: str | None = None) -> None:
        """Write ``points``, made by ``embedder`` (default: the one in use). The collection's
        record is read afresh: another process may have rebuilt it for another model
        since (a worker left on the old settings must not fill the new collection)."""
        if not points:
            return
        from qdrant_client import models

        dimension = self.collection_dimension(name)  # refreshes the record
        if dimension is None:
            dimension = len(points[0].vector)
            self.ensure_collection(name, dimension, embedder=embedder)
        check_embedder(name, self._embedders.get(name), embedder)
        check_vectors(name, points, dimension)
        structs = [
            models.PointStruct(id=p.id, vector=list(p.vector), payload=dict(p.payload))
            for p in points
        ]
        try:
            with self._errors(name):
                self.client.upsert(name, points=structs, wait=True)
        except CollectionGone:
            self.ensure_collection(name, dimension, embedder=embedder)
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
        self._check_record(name)
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
                    query_filter=server_engine.search_filter(filters),
                    with_payload=True if payload_fields is None else list(payload_fields),
                    with_vectors=with_vectors,
                    search_params=server_engine.search_params(),
                )
        except CollectionGone:
            return []
        return [scored_hit(p, with_vectors=with_vectors) for p in response.points]

    def delete(self, name: str, ids: list[str]) -> None:
        if not ids or self._dimension(name) is None:
            return
        from qdrant_client import models

        with contextlib.suppress(CollectionGone), self._errors(name):
            self.client.delete(
                name, points_selector=models.PointIdsList(points=list(ids)), wait=True
            )

    def retrieve(
        self, name: str, ids: list[str], *, with_vectors: bool = False, with_payload: bool = True
    ) -> list[VectorHit]:
        if not ids or self._dimension(name) is None:
            return []
        try:
            with self._errors(name):
                records = self.client.retrieve(
                    name, ids=list(ids), with_payload=with_payload, with_vectors=with_vectors
                )
        except CollectionGone:
            return []
        return [stored_hit(r, with_vectors=with_vectors) for r in records]

    def vectors(self, name: str, ids: list[str]) -> dict[str, Any]:
        """The stored vectors of those ``ids`` the collection holds, as float64 arrays
        (none kept: other processes write to a server)."""
        import numpy as np

        return {
            hit.id: np.asarray(hit.vector, dtype=np.float64)
            for hit in self.retrieve(name, ids, with_vectors=True, with_payload=False)
            if hit.vector is not None
        }

    def count(self, name: str) -> int:
        if self._dimension(name) is None:
            return 0
        try:
            with self._errors(name):
                return int(self.client.count(name, exact=True).count)
        except CollectionGone:
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
            except CollectionGone:
                return
            for record in records:
                yield str(record.id)
            if offset is None:
                return

    def drop_collection(self, name: str) -> None:
        self._dimensions.pop(name, None)
        self._embedders.pop(name, None)
        with self._errors():
            self.client.delete_collection(name)

    def rewrite(self, name: str) -> None:
        """Nothing: a server keeps its own files, out of this process's reach (it drops a
        deleted point's bytes when its own vacuum rewrites the segment). The embedded
        store's rewrite is for the folder it owns."""
        return None

    def optimize(self, *, min_unindexed: int = 0, quiet_s: float = 0.0) -> dict[str, int]:
        """A Qdrant server builds its indexes itself, in the background. A collection
        created before the int8 copy is given it here (the server builds it in the
        background too), once per process; {} always: nothing was built here. A server
        that is down is asked again at the next pass, never raises here."""
        for name in COLLECTIONS:
            if name in self._int8_checked:
                continue
            try:
                with self._errors(name):  # a collection that does not exist: CollectionGone
                    info = self.client.get_collection(name)
                    if info.config.quantization_config is None:
                        self.client.update_collection(
                            name, quantization_config=server_engine.int8_copy()
                        )
                        logger.info("Qdrant collection %s: int8 copy asked", name)
            except CollectionGone:
                continue
            except StoreUnavailable as exc:
                logger.warning("Qdrant upkeep postponed: %s", exc)
                return {}
            self._int8_checked.add(name)
        return {}

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.client.close()
