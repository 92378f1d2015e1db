"""What a purge or an erasure leaves of the deleted text in SQLite's files, scrubbed.

Deleting a row frees its bytes without writing over them: the erased text stayed in
the database file's free space, in the keyword indexes' old segments (FTS5 marks a row
deleted in a newer segment, the older one still holds its words) and in the
write-ahead log, where every earlier version of its pages was written (measured: an
erased fact's value 16 times in the WAL, 3 times in the file after a checkpoint). So
every connection runs with ``secure_delete`` (SQLite writes zeros over what it frees;
settings.DATABASES), and once the rows are deleted, ``sqlite_scrub`` merges the
keyword indexes that held them into one segment each (their deleted words dropped,
the freed pages zeroed) and checkpoints the log into the file, truncating it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import connection, transaction

from memory.stores.fts_upkeep import KEYWORD_INDEXES

logger = logging.getLogger(__name__)

# How long the checkpoint waits for the readers of an older snapshot and the writer;
# past it the scrub is left for later (ScrubBusy), not waited for in a request.
CHECKPOINT_WAIT_MS = 1000


class ScrubBusy(Exception):
    """The log could not be checkpointed whole (a reader or a writer held it)."""


def sqlite_scrub(indexes: Iterable[str]) -> None:
    """Merge ``indexes`` (KEYWORD_INDEXES) and checkpoint the log into the file, truncated.

    Raises ScrubBusy when the checkpoint could not complete: the log still holds pages
    written before the deletion, so the caller tries again later. A caller inside a
    transaction (a test's) gets the merge only: its deletions are not in the log yet, and
    SQLite checkpoints nothing from inside one.
    """
    if connection.vendor != "sqlite" or connection.settings_dict["NAME"] == ":memory:":
        return
    for table in dict.fromkeys(indexes):
        if table not in KEYWORD_INDEXES:  # the name goes into the SQL
            raise ValueError(f"not a keyword index: {table!r}")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    if connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        (waited,) = cursor.fetchone()
        cursor.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
        try:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy, _, _ = cursor.fetchone()
        finally:
            cursor.execute(f"PRAGMA busy_timeout={int(waited)}")
    if busy:
        raise ScrubBusy("the write-ahead log could not be checkpointed whole (busy)")
    logger.info("sqlite scrubbed: %s merged, the log checkpointed", ", ".join(indexes) or "none")
