"""A Qdrant Edge collection written anew, so that its folder keeps nothing of deleted points.

Deleting a point in Qdrant Edge marks it deleted: its payload (a message's text, a
fact's key and value) stays in the shard's WAL and segment pages, through flushes,
optimizations and restarts. After an erasure (memory.services.removal) the store
copies every remaining point into a new shard of the same configuration and puts
it in the old one's place (vectors_edge.EdgeVectorStore.rewrite).

The swap survives a process killed at any moment. The new shard is built, flushed,
closed and synced in ``<name>.rewrite``; then the old folder is renamed
``<name>.replaced``, the new one renamed ``<name>``, and the old one removed. So
whichever folders a crash leaves, one of them is complete, and ``folder_recover``
(at the store's start) keeps it:

- ``<name>`` and ``<name>.rewrite``: the build was cut short; the old one stays.
- ``<name>.replaced`` and ``<name>.rewrite``: cut between the two renames; the new
  one was complete before the old one moved aside, so it comes in.
- ``<name>`` and ``<name>.replaced``: cut before the old one was removed.

The engine is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from memory.stores import edge_engine
from memory.stores.vectors import SCROLL_PAGE, plain_vector

logger = logging.getLogger(__name__)

REWRITE_SUFFIX = ".rewrite"  # the new collection while it is built
REPLACED_SUFFIX = ".replaced"  # the old one, between the two renames and its removal
REWRITE_COUNT_MESSAGE = "réécriture de {name} : {copied} points copiés sur {expected}"


def rewrite_path(folder: Path) -> Path:
    return folder.with_name(folder.name + REWRITE_SUFFIX)


def replaced_path(folder: Path) -> Path:
    return folder.with_name(folder.name + REPLACED_SUFFIX)


def shard_copy(shard: Any, folder: Path, dimension: int, embedder: str) -> int:
    """Build in rewrite_path(``folder``) a shard holding ``shard``'s points (ids,
    vectors, payloads), its payload indexes and the collection's record (the file as it
    is, else ``embedder``); flushed, closed and synced to disk. The points copied."""
    import qdrant_edge as qe

    target = rewrite_path(folder)
    _remove(target)  # a build cut short earlier
    expected = int(shard.count(qe.CountRequest(exact=True)))
    new = edge_engine.shard_create(folder.parent, target, dimension)
    try:
        edge_engine.payload_indexes_ensure(new)
        copied, offset = 0, None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(
                    offset=offset, limit=SCROLL_PAGE, with_payload=True, with_vector=True
                )
            )
            points = [
                qe.Point(
                    r.id if isinstance(r.id, int) else str(r.id),
                    plain_vector(r.vector, floats=True),
                    dict(r.payload or {}),
                )
                for r in records
            ]
            if points:
                new.update(qe.UpdateOperation.upsert_points(points))
            copied += len(points)
            if offset is None:
                break
        if copied != expected:  # never swap in a collection that lost points
            raise RuntimeError(
                REWRITE_COUNT_MESSAGE.format(name=folder.name, copied=copied, expected=expected)
            )
        # No search index here: the periodic upkeep builds it once the store is quiet
        # (maintenance.search_index_maintain); built here, it held the GIL for seconds
        # inside the erasure (5.7 of 7.5 s at 20,000 points). Exact search meanwhile.
        new.flush()
    finally:
        with contextlib.suppress(Exception):
            new.close()
    record = folder / edge_engine.EDGE_EMBEDDER_FILE
    if record.exists():  # as it is, even unreadable: what it refuses, the new one refuses
        shutil.copyfile(record, target / edge_engine.EDGE_EMBEDDER_FILE)
    else:
        edge_engine.record_write(folder.name, target, embedder)
    _sync_tree(target)
    return copied


def folder_swap(folder: Path) -> None:
    """Put the complete rewrite_path(``folder``) in ``folder``'s place, whose shard is
    closed, and remove the old one."""
    aside = replaced_path(folder)
    _remove(aside)
    _rename(folder, aside)
    _rename(rewrite_path(folder), folder)
    _remove(aside)


def folder_recover(folder: Path) -> None:
    """Leave ``folder`` holding a complete collection after a rewrite cut short (the
    cases in this module's docstring), and no folder of the rewrite beside it."""
    new, aside = rewrite_path(folder), replaced_path(folder)
    if aside.exists() and not folder.exists():
        if new.exists():
            logger.warning("Qdrant Edge collection %s: interrupted rewrite completed", folder.name)
            _rename(new, folder)
        else:  # not a state the swap leaves; the old collection is whole
            _rename(aside, folder)
    if new.exists():
        logger.warning("Qdrant Edge collection %s: interrupted rewrite discarded", folder.name)
    _remove(new)
    _remove(aside)


def store_recover(path: Path) -> None:
    """folder_recover for every collection of the store's folder ``path`` a rewrite was
    cut short in."""
    for entry in list(path.iterdir()):
        for suffix in (REWRITE_SUFFIX, REPLACED_SUFFIX):
            if entry.name.endswith(suffix) and entry.is_dir():
                folder = entry.with_name(entry.name[: -len(suffix)])
                if folder.name.isidentifier():
                    folder_recover(folder)


def _rename(source: Path, target: Path) -> None:
    """Rename, durably: the parent folder synced, so a power loss keeps the order."""
    os.rename(source, target)
    _sync_dir(target.parent)


def _remove(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)


def _sync_tree(folder: Path) -> None:
    """Every file and folder of ``folder`` on disk before it can be renamed in."""
    for root, _, files in os.walk(folder):
        for file_name in files:
            fd = os.open(os.path.join(root, file_name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(Path(root))
    _sync_dir(folder.parent)


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
