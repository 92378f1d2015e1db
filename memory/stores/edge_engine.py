"""What a Qdrant Edge collection folder holds, and how the engine is configured.

The embedded store (memory.stores.vectors_edge) opens one shard per collection
folder: the engine's configuration for it (created and at every load), its
search parameters and filters, its payload indexes and when to build its search
index, the files read beside the engine's own (its dimension, the record of the
embedder that filled it, whether its index predates the int8 copy), the lock
of the whole folder, and the engine's errors told as ours. The engine is
imported inside functions only.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from memory.exceptions import StoreUnavailable
from memory.stores.vectors import (
    DATETIME_FIELDS,
    EMBEDDER_KEY,
    INT8_OVERSAMPLING,
    INT8_QUANTILE,
    KEYWORD_FIELDS,
    Filters,
    current_embedder,
)

logger = logging.getLogger(__name__)

# Segments above this size (KB) get a search index when optimized: about 650 vectors of 384
# dimensions (None: Qdrant's default, about 6,500). A personal memory's knowledge (its facts,
# summaries and their passages) holds a few thousand points for years, and below Qdrant's
# default each of its searches was exact: at 10,000 memories, 3,000 knowledge points, 0.67 ms
# a search alone; indexed, what a pre-hook adds to its embedding p50 -1.1 ms (two alternating
# pairs of runs), the same hits (recall@16 against exact search 1.000). Tests lower it.
EDGE_INDEXING_THRESHOLD_KB: int | None = 1000
# A collection none of whose points is indexed yet gets its index once it holds this many,
# whatever the upkeep's minimum (shard_optimize).
EDGE_INDEX_FIRST_MIN = 1000

# Threads of each shard's search pool (None: Qdrant's default, one per core). The
# binding holds the GIL while a search waits for its pool, so with the pool's
# threads queueing behind the query embeddings for a core, every other thread of
# the process waited too: a search beside two embeddings took p95 3.4-4.4 ms with
# the default against 0.34-0.40 ms with one thread (0.30 -> 0.22 ms p50).
EDGE_SEARCH_THREADS = 1

EDGE_CONFIG_FILE = "edge_config.json"
# Ours, beside the engine's files: {"makilab_embedder": "<embedder name>"}.
EDGE_EMBEDDER_FILE = "makilab_embedder.json"
# What a collection whose record cannot be read is taken to hold: no embedder's vectors.
UNREADABLE_RECORD = "(enregistrement illisible)"
EDGE_ERROR_MESSAGE = "Qdrant embarqué ({path}) : {detail}"
EDGE_LOCK_FILE = ".makilab.lock"
EDGE_LOCKED_MESSAGE = (
    "Le dossier Qdrant {path} est déjà ouvert par un autre processus : la base "
    "vectorielle embarquée n'a qu'un propriétaire. Arrêtez l'autre processus, ou "
    "configurez QDRANT_URL pour partager un serveur Qdrant."
)


EDGE_READ_ONLY_MESSAGE = (
    "Qdrant embarqué ({path}) : {file} n'est pas accessible en écriture (dossier en lecture "
    "seule, fichier protégé) ; les lignes attendent qu'il le redevienne."
)


def writable_or_unavailable(folder: Path) -> None:
    """StoreUnavailable unless every file of the collection in ``folder`` can be written.

    The engine writes its files through memory maps: one that became read-only while the
    process ran (a read-only remount, an immutable flag) makes that write a SIGBUS, which
    ended the whole process, web server included (QA). Checked before each write, the
    store is down instead: the rows stay pending and the service answers on. About a
    hundred access() calls a write (a few µs each). A full disk still faults: no check
    says in advance whether a page will find room."""
    for directory, _dirs, files in os.walk(folder):
        for name in (".", *files):
            path = os.path.join(directory, name)
            if not os.access(path, os.W_OK):
                raise StoreUnavailable(
                    EDGE_READ_ONLY_MESSAGE.format(path=folder, file=os.path.relpath(path, folder))
                )


def engine_error(path: Path, exc: BaseException) -> StoreUnavailable:
    """The engine's error ``exc`` told as the store's in ``path`` (a lock held elsewhere
    named as such)."""
    detail = str(exc)
    if "WouldBlock" in detail or "lock" in detail.lower():
        return StoreUnavailable(EDGE_LOCKED_MESSAGE.format(path=path))
    return StoreUnavailable(EDGE_ERROR_MESSAGE.format(path=path, detail=detail))


def folder_dimension(folder: Path) -> int | None:
    """The vector size of the collection in ``folder`` (None: no collection there)."""
    config_file = folder / EDGE_CONFIG_FILE
    try:
        config = json.loads(config_file.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StoreUnavailable(
            EDGE_ERROR_MESSAGE.format(path=config_file, detail=f"configuration illisible: {exc}")
        ) from exc
    return int(config["vectors"][""]["size"])


def record_read(name: str, folder: Path) -> str | None:
    """The collection's record; None when it has none, UNREADABLE_RECORD when it cannot
    be read (its searches and writes are then refused until a rebuild, its deletes not)."""
    path = folder / EDGE_EMBEDDER_FILE
    try:
        return str(json.loads(path.read_text())[EMBEDDER_KEY])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("Qdrant Edge collection %s: record %s unreadable (%s)", name, path, exc)
        return UNREADABLE_RECORD


def record_write(name: str, folder: Path, embedder: str) -> None:
    """Write the record (synced before it replaces the old one). A folder that refuses
    it is logged: the store keeps the record in its process, the next one adopts the
    collection again."""
    path = folder / EDGE_EMBEDDER_FILE
    partial = path.with_suffix(".tmp")
    try:
        with open(partial, "w") as file:
            file.write(json.dumps({EMBEDDER_KEY: embedder}))
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    except OSError as exc:
        logger.warning("Qdrant Edge collection %s: record not written (%s)", name, exc)


def record_adopted(name: str, folder: Path) -> str:
    """The collection's record (record_read); a folder without one is recorded as filled
    by the embedder in use (record_write)."""
    recorded = record_read(name, folder)
    if recorded is None:
        # A folder from before the record: the embedder in use adopts it.
        recorded = current_embedder()
        record_write(name, folder, recorded)
        logger.info("Qdrant Edge collection %s recorded as filled by %s", name, recorded)
    return recorded


def indexed_without_copy(shard_path: Path) -> bool:
    """Whether a shard holds a segment with a search index and no int8 copy: indexed by a
    version before the copy (vectors.INT8_QUANTILE). Read from the segments' files,
    as the engine tells nothing of it; a layout it does not know reads as False."""
    try:
        segments = list((shard_path / "segments").iterdir())
    except OSError:
        return False
    return any(
        (segment / "vector_index" / "hnsw_config.json").is_file()
        and not (segment / "vector_storage" / "quantized.config.json").is_file()
        for segment in segments
    )


def edge_config(dimension: int) -> Any:
    """A shard's configuration, at creation and at every load (what is left None keeps
    what the shard has on disk)."""
    import qdrant_edge as qe

    optimizers = (
        qe.EdgeOptimizersConfig(indexing_threshold=EDGE_INDEXING_THRESHOLD_KB)
        if EDGE_INDEXING_THRESHOLD_KB is not None
        else None
    )
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(
            size=dimension,
            distance=qe.Distance.Cosine,
            quantization_config=qe.ScalarQuantizationConfig(
                qe.ScalarType.Int8, quantile=INT8_QUANTILE, always_ram=True
            ),
        ),
        optimizers=optimizers,
        max_search_threads=EDGE_SEARCH_THREADS,
    )


@functools.lru_cache(maxsize=1)
def edge_search_params() -> Any:
    """Every search: on the int8 copy where a segment has one, then ranked again on the
    stored vectors (INT8_OVERSAMPLING times the hits asked). A segment without the copy
    (not indexed yet, or built before quantization) is searched on its vectors alone."""
    import qdrant_edge as qe

    return qe.SearchParams(
        quantization=qe.QuantizationSearchParams(rescore=True, oversampling=INT8_OVERSAMPLING)
    )


def edge_filter(filters: Filters | None) -> Any:
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


def shard_load(path: Path, folder: Path, dimension: int) -> Any:
    """The shard in ``folder``, of ``dimension`` (folder_dimension); errors told as the
    store's in ``path`` (engine_error)."""
    import qdrant_edge as qe

    try:
        return qe.EdgeShard.load(str(folder), edge_config(dimension))
    except Exception as exc:  # the binding raises bare Exception
        raise engine_error(path, exc) from exc


def shard_create(path: Path, folder: Path, dimension: int) -> Any:
    """A new shard in ``folder``, which holds no collection (folder_dimension None);
    errors told as the store's in ``path`` (engine_error)."""
    import qdrant_edge as qe

    if folder.exists():
        # A folder without edge_config.json: a creation interrupted by a
        # crash. Nothing in it is readable; start again.
        shutil.rmtree(folder)
    try:
        return qe.EdgeShard.create(str(folder), edge_config(dimension))
    except Exception as exc:
        raise engine_error(path, exc) from exc


def folder_lock(path: Path) -> int:
    """Lock the store's folder for this process; the lock file's descriptor (closing it
    releases the lock). Raises StoreUnavailable when another process holds it."""
    import fcntl

    # Our own lock on top of the WAL's: it covers every collection of the folder,
    # including those not opened yet, and it is released by the kernel if the
    # process dies, so a crash never leaves a stale lock behind.
    try:
        fd = os.open(path / EDGE_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a read-only folder or lock file (QA: a traceback at start)
        from memory.error_reasons import os_error_reason

        detail = f"{EDGE_LOCK_FILE} : {os_error_reason(exc)}"
        raise StoreUnavailable(EDGE_ERROR_MESSAGE.format(path=path, detail=detail)) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise StoreUnavailable(EDGE_LOCKED_MESSAGE.format(path=path)) from exc
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def folder_open(path: Path) -> int:
    """Create the store's folder if needed and lock it (folder_lock); the lock file's
    descriptor."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(EDGE_ERROR_MESSAGE.format(path=path, detail=exc)) from exc
    return folder_lock(path)


def payload_indexes_ensure(shard: Any) -> None:
    """Index the payload fields filters read (keywords, dates), those a shard lacks."""
    import qdrant_edge as qe

    existing = set(shard.info().payload_schema)
    for field_name in KEYWORD_FIELDS:
        if field_name not in existing:
            shard.update(
                qe.UpdateOperation.create_field_index(field_name, qe.PayloadSchemaType.Keyword)
            )
    for field_name in DATETIME_FIELDS:
        if field_name not in existing:
            shard.update(
                qe.UpdateOperation.create_field_index(field_name, qe.PayloadSchemaType.Datetime)
            )


def shard_optimize(shard: Any, folder: Path, min_unindexed: int) -> int | None:
    """Build ``shard``'s search index if at least ``min_unindexed`` points lie outside it
    (fewer for a collection smaller than that: as many as are inside, from
    EDGE_INDEX_FIRST_MIN), or if indexed segments lack the int8 copy (built by an earlier version: rebuilt with
    it whatever the minimum); the points that were outside it (all of them when segments
    were rebuilt for the copy), None when nothing was built.

    Qdrant Edge never optimizes by itself: without this every search is an exact
    scan, whose cost grows with the collection (×5 from 10k to 100k points).
    Blocking, and the binding holds the GIL while it runs (the benchmark's 100k
    points: 15 s with the int8 copy, 28 s without; 7,000 points added to them: 5.3 s
    without); a segment below the indexing threshold (EDGE_INDEXING_THRESHOLD_KB, ~650
    vectors of 384 dimensions) is left to exact search.
    """
    info = shard.info()
    outside = info.points_count - info.indexed_vectors_count
    without_copy = indexed_without_copy(folder)
    # What lies outside may grow to what is inside before a rebuild, up to ``min_unindexed``:
    # a collection of fewer points than that minimum (a memory's knowledge) is indexed from
    # EDGE_INDEX_FIRST_MIN points, and again as it doubles.
    wanted = min(min_unindexed, max(EDGE_INDEX_FIRST_MIN, info.indexed_vectors_count))
    if outside < max(1, wanted) and not without_copy:
        return None
    # False: nothing to build (a segment below the indexing threshold).
    # The engine also rebuilds the segments whose configuration changed.
    if not shard.optimize():
        return None
    return info.points_count if without_copy else outside
