"""SQLite's query-planner statistics (sqlite_stat1), refreshed when the data changed shape.

Without statistics SQLite assumes any equality narrows a table to a few rows,
so ``forgetting_id IS NULL`` (true of nearly every fact) wins over the
importance or created_at index, and the pre-hook's T1 lookups scan and sort
every fact. ANALYZE records how selective each index really is.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)

# Rows sampled per index: enough to tell a selective index from a useless one,
# cheap (milliseconds) even at millions of rows.
ANALYSIS_LIMIT = 1000
# Tables analysed whole: the pre-hook's T1 lookups filter them by ranges (importance,
# dates), which a sample of the first rows of each index cannot rate (at 30,000 facts
# every index of core_memory looked alike and T1 read all facts through forgetting_id).
# The facts table stays small next to the messages: 25 ms at 30,000 facts.
ANALYZED_WHOLE = ("core_memory", "memory_summary")


def planner_statistics_refresh() -> bool:
    """ANALYZE the database (sampled; the tables of ANALYZED_WHOLE whole). Never raises:
    statistics are an optimisation."""
    if connection.vendor != "sqlite":
        return False
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
            cursor.execute("ANALYZE")
            cursor.execute("PRAGMA analysis_limit=0")
            for table in ANALYZED_WHOLE:
                cursor.execute(f"ANALYZE {table}")
    except DatabaseError as exc:
        logger.warning("could not refresh the planner statistics: %s", exc)
        return False
    return True
