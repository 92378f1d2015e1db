"""Upkeep of the FTS5 indexes: their integrity, a rebuild, and merging their segments.

FTS5 writes each transaction's rows as a new segment of the index and merges
segments a few at a time as they pile up (its automerge): a memory written one
message at a time keeps a dozen or more, and a query looks each word up, and
merges its rows, in every one. At 100,000 memories, seeded as the benchmark
does, the messages' index held 16 segments and the facts' 14; merged into one
each (0.16 and 0.03 s), a query took 13-17 % less (alternating between the two
files, 600 queries each: finding the matches of 3 words p50 0.50 -> 0.42 ms,
ranking the newest of them 2.34 -> 2.03 ms). fts_merge is run with the search index's
upkeep (memory.services.maintenance.search_index_maintain: at `serve`'s start and
by the periodic task), so the indexes stay merged as the memory grows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from django.db import DatabaseError, connection, transaction

from memory.db.fts_schema import CURRENT
from memory.stores.compiled import raw_fetchall

logger = logging.getLogger(__name__)

# The FTS5 tables, ours (never user text in the SQL below).
KEYWORD_INDEXES = tuple(table.name for table in CURRENT)
# An index with more segments than this is merged into one. Merging rewrites the
# whole index under the write lock (writers wait; readers do not): about 1.6 s per
# million messages, so not after every few writes; FTS5's own merging keeps the
# count near this between two upkeeps of a memory written at a person's pace.
FTS_MERGE_MIN_SEGMENTS = 8


def fts_segments(table: str) -> int:
    """How many segments ``table``'s index has (each has rows in its ``_idx`` table)."""
    if table not in KEYWORD_INDEXES:  # the name goes into the SQL
        raise ValueError(f"not a keyword index: {table!r}")
    return raw_fetchall(f"SELECT count(DISTINCT segid) FROM {table}_idx", [])[0][0]


def fts_merge(*, min_segments: int | None = None) -> dict[str, int]:
    """Merge each keyword index holding more than ``min_segments`` segments
    (FTS_MERGE_MIN_SEGMENTS) into one (FTS5's 'optimize'); {table: segments it had}
    for those merged. Scores and results are unchanged: only where the index keeps
    its rows changes."""
    if min_segments is None:
        min_segments = FTS_MERGE_MIN_SEGMENTS
    merged: dict[str, int] = {}
    for table in KEYWORD_INDEXES:
        segments = fts_segments(table)
        if segments <= min_segments:
            continue
        start = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        merged[table] = segments
        logger.info(
            "keyword index %s: %d segments merged into one in %.2f s",
            table,
            segments,
            time.perf_counter() - start,
        )
    return merged


def fts_broken() -> list[str]:
    """The keyword indexes that disagree with their rows (FTS5's integrity check, which
    also compares each index with its content view): words of a row that is gone or
    forgotten, a row no word finds. The triggers keep them in step; a row written
    behind them (SQLite's shell, a damaged file) does not."""
    broken = []
    for table in CURRENT:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(table.integrity_check_sql())
        except DatabaseError:  # SQLITE_CORRUPT_VTAB
            broken.append(table.name)
    return broken


def fts_integrity_check() -> None:
    """Raise django.db.DatabaseError when an index disagrees with its rows."""
    for table in CURRENT:
        with connection.cursor() as cursor:
            cursor.execute(table.integrity_check_sql())


def fts_rebuild(tables: Sequence[str] = KEYWORD_INDEXES) -> None:
    """Rebuild ``tables``' indexes from their rows (the memory_doctor's repair)."""
    for table in tables:
        if table not in KEYWORD_INDEXES:  # the name goes into the SQL
            raise ValueError(f"not a keyword index: {table!r}")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
        logger.info("keyword index %s rebuilt from its rows", table)
