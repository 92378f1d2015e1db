"""A restore's end, after ``memory_restore`` copied the backup and the migration ran
(memory.services.backup): what the replaced memory did since the backup was taken is
replayed, and no restored row claims a point this data dir lacks."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from memory.services.backup import database_path, embedded_qdrant
from memory.services.restore_journal import journal_clear


def memory_restore_finish(*, manifest: dict) -> dict[str, object]:
    """After ``memory_restore`` and the migration: what the replaced memory did since the
    backup was taken stands, and no restored row claims a point this data dir lacks.

    The carried forgets are taken first: the replay of the erasure marks then purges
    those past their undo window (and those it empties), as the hourly purge would.
    """
    from memory.services.backup_forgets import forgets_replay
    from memory.services.erased_replay import marks_replay

    forgotten = forgets_replay(manifest["forgets"])
    erased = marks_replay(manifest["erased_marks"])
    requeued, dropped = _vectors_reset()
    journal_clear(database_path())
    return {"forgotten": forgotten, "erased": erased, "requeued": requeued, "dropped": dropped}


def _vectors_reset() -> tuple[int, Path | None]:
    """The backup holds SQLite only: its rows say 'indexed' for points this data dir does
    not hold (a fresh Qdrant folder), or holds for another memory (the replaced one's).
    Every row that makes a point goes back to pending, version bumped, as ``reindex
    --recreate`` requeues them (``rows_changed``): the indexing sweep rebuilds them on its
    own. Then the embedded Qdrant folder's collections are dropped: left there, the
    points of the replaced memory's rows that the backup does not hold would stay as
    orphans (the sweep writes points, it never looks for strays). Requeued first: a
    restore stopped between the two leaves pending rows whose points the sweep rewrites,
    never rows marked indexed over a dropped collection. A Qdrant server is left alone
    (not part of the data dir): ``reindex --recreate`` clears it.

    Returns (rows requeued, the folder whose collections were dropped or None).
    """
    from memory.services.indexing import rows_changed
    from memory.services.maintenance import COLLECTION_KINDS, REQUEUE_BATCH, source_ids

    requeued = 0
    with transaction.atomic():
        for name, kinds in COLLECTION_KINDS.items():
            for kind in kinds:
                ids = source_ids(kind, name)
                for start in range(0, len(ids), REQUEUE_BATCH):
                    rows_changed(kind, ids[start : start + REQUEUE_BATCH])
                requeued += len(ids)
    folder = embedded_qdrant()
    if folder is not None:
        from memory.stores.vectors import get_vector_store

        store = get_vector_store()
        for name in COLLECTION_KINDS:
            store.drop_collection(name)
    return requeued, folder
