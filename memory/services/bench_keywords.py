"""What bounding the keyword OR query costs in results and saves in time, on the benchmark's data.

For sample questions, the keyword source's message ranking with the budget
(memory.stores.fts_rank.OR_MATCH_BUDGET: the most frequent words counted in pairs only;
RANK_WINDOW: past it, the newest matches ranked, beside every row of an uncommon word) and
without them: the share of the unbounded top ``limit`` the bounded query keeps,
and the time of each.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from memory.services.bench_data import bench_question
from memory.services.benchmarks import Timing


def keyword_bound_report(*, out: Callable[[str], None], sample: int = 100, limit: int = 16) -> None:
    from memory.services.keywords import keyword_terms
    from memory.stores.fts import fts_rank_messages
    from memory.stores.fts_rank import OR_MATCH_BUDGET, RANK_WINDOW

    overlaps: list[float] = []
    bounded_ms: list[float] = []
    unbounded_ms: list[float] = []
    for i in range(sample):
        terms = keyword_terms(bench_question(200_000 + i))
        if not terms:
            continue
        started = time.perf_counter()
        exact = fts_rank_messages(terms, limit=limit, bounded=False)
        unbounded_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        kept = fts_rank_messages(terms, limit=limit)
        bounded_ms.append((time.perf_counter() - started) * 1000)
        want = {hit.message_id for hit in exact}
        overlaps.append(len(want & {hit.message_id for hit in kept}) / len(want) if want else 1.0)
    if not overlaps:
        return
    out(
        f"keywords  OR budget {OR_MATCH_BUDGET} rows, rank window {RANK_WINDOW}: top-{limit} kept {statistics.fmean(overlaps):.3f} "
        f"of the unbounded query's ({len(overlaps)} questions)"
    )
    out(Timing("bounded", bounded_ms).line() + "  (keyword OR query, within the budget and window)")
    out(Timing("unbounded", unbounded_ms).line() + "  (keyword OR query, every word)")
