"""The pre-hook's SQL stage: keywords (here or in their process), T1, the last turns'
injections, and the hydration of what they found (memory.services.retrieval.pipeline
calls it in the caller's thread, beside the semantic searches)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import NamedTuple

from memory.models import Fact, MemorySettings, Message
from memory.services.keywords_process import KeywordsRequest
from memory.services.retrieval.block import agent_summary_lines
from memory.services.retrieval.candidates import Seen
from memory.services.retrieval.ranking import prefetch
from memory.services.retrieval.result import RetrievalResult, elapsed_ms, failure_text
from memory.services.retrieval.selection import recently_injected
from memory.services.retrieval.semantic import semantic_ids
from memory.services.retrieval.sources import (
    SOURCE_KEYWORDS,
    SOURCE_SEMANTIC,
    SOURCE_T1,
    keyword_search,
    t1_context,
)


class SqlSources(NamedTuple):
    """What the SQL stage hands to fusion and the block."""

    ranked: dict[str, list[tuple[str, float]]]  # T1's list, then the keywords'
    history: list[Message]
    seen: Seen
    core: list[Fact]
    agent_lines: tuple  # agent_summary_lines: the self and goals lines
    recent_ids: set[str]
    prefetched: tuple | None  # ranking.prefetch's answer (None: it failed)


def sql_sources(
    text: str,
    channel: str,
    *,
    memory_settings: MemorySettings,
    limit: int,
    now,
    tz,
    message_ids: Sequence[int],
    timeouts: dict[str, float],
    result: RetrievalResult,
    facts_apart: bool,
    keywords_apart: KeywordsRequest | None = None,
    semantic_future: Future | None = None,
) -> SqlSources:
    """The sources read from SQLite in the caller's thread: keywords, T1, the last
    turns' injections, and their hydration. ``facts_apart``: the facts' keyword query
    on its own connection (keyword_search). ``keywords_apart``: the keywords asked of
    their process (memory.services.keywords_process), read after T1 and the
    hydration of what is known by then (T1's list, the last turns' finds, the
    semantic hits if ``semantic_future`` is done): the caller would otherwise wait
    for the process with nothing to do, and fusion hydrates the keyword hits it
    keeps. Ranked here if the request never left.

    The keyword search first: FTS5 ranks in C without the GIL, beside the semantic
    thread's Qdrant searches (which hold it); T1's ORM reads would keep that thread
    from its searches once the vector is there (10,000 memories, one store,
    alternating: p50 26.8 -> 24.5 ms, p95 31.8 -> 28.8 against T1 first; 100,000:
    34.6 / 39.8 -> 32.0 / 37.6).
    """
    from memory.stores.fts import sql_deadline

    keywords: list[tuple[str, float]] | None = None
    asked = time.monotonic()
    if keywords_apart is None:
        keywords = _keywords_here(text, limit, timeouts, result, facts_apart=facts_apart)

    ranked: dict[str, list[tuple[str, float]]] = {}
    history: list[Message] = []
    seen = Seen()
    core: list[Fact] = []
    facts = None
    early: tuple[set[str], tuple | None] | None = None
    start = time.perf_counter()
    try:
        try:
            with sql_deadline(timeouts["t1"]):
                history, seen, core, ranked[SOURCE_T1], facts = t1_context(
                    channel, memory_settings, now, message_ids
                )
        except Exception as exc:  # never raise from the pre-hook
            result.failed_sources[SOURCE_T1] = failure_text(exc, SOURCE_T1)
        # Who the agent is: in every block, whatever the gate says (the prompt no longer says it).
        agent_lines = agent_summary_lines(result, facts=facts)
        result.timings_ms[SOURCE_T1] = elapsed_ms(start)
        if keywords_apart is not None:  # while the process ranks
            known = {**ranked, SOURCE_SEMANTIC: _semantic_if_done(semantic_future)}
            early = _prefetched(known, channel, memory_settings, text, now, tz, result)
    finally:  # whatever happened, the process is answered for (and free for the next call)
        if keywords_apart is not None:
            keywords = _keywords_apart_collect(
                keywords_apart, asked, text, limit, timeouts, result, facts_apart=facts_apart
            )
    if keywords is not None:
        ranked[SOURCE_KEYWORDS] = keywords  # after T1's list, as the sources always came
    recent_ids, prefetched = early or _prefetched(
        ranked, channel, memory_settings, text, now, tz, result
    )
    return SqlSources(ranked, history, seen, core, agent_lines, recent_ids, prefetched)


def _prefetched(
    ranked: dict[str, list[tuple[str, float]]],
    channel: str,
    memory_settings: MemorySettings,
    text: str,
    now,
    tz,
    result: RetrievalResult,
) -> tuple[set[str], tuple | None]:
    """The last turns' injections, and the hydration of what ``ranked`` found and of them
    (ranking.prefetch's answer, None when it failed: fusion hydrates what is missing)."""
    start = time.perf_counter()
    prefetched = None
    recent_ids: set[str] = set()
    try:
        recent_ids = recently_injected(channel, memory_settings.reinjection_turns)
        prefetched = prefetch(ranked, text=text, now=now, tz=tz, also=recent_ids)
    except Exception as exc:  # never raise from the pre-hook; fuse hydrates what is missing
        result.failed_sources["prefetch"] = failure_text(exc, "prefetch")
    result.timings_ms["prefetch"] = elapsed_ms(start)
    return recent_ids, prefetched


def _semantic_if_done(future: Future | None) -> list[tuple[str, float]]:
    """The semantic source's ranked ids if it has already answered, else none (no wait)."""
    if future is None or not future.done() or future.cancelled() or future.exception():
        return []
    return semantic_ids(future.result()["hits"])


def _keywords_apart_collect(
    request: KeywordsRequest,
    asked: float,
    text: str,
    limit: int,
    timeouts: dict[str, float],
    result: RetrievalResult,
    *,
    facts_apart: bool,
) -> list[tuple[str, float]] | None:
    """The keywords the process ranked, within the source's time limit from ``asked``
    (time.monotonic); ranked in this thread if the request never left."""
    try:
        keywords = request.result(deadline=asked + timeouts[SOURCE_KEYWORDS])
    except Exception as exc:
        result.failed_sources[SOURCE_KEYWORDS] = failure_text(exc, SOURCE_KEYWORDS)
        return None
    if keywords is None:
        return _keywords_here(text, limit, timeouts, result, facts_apart=facts_apart)
    result.timings_ms[SOURCE_KEYWORDS] = request.elapsed_ms
    return keywords


def _keywords_here(
    text: str, limit: int, timeouts: dict[str, float], result: RetrievalResult, *, facts_apart: bool
) -> list[tuple[str, float]] | None:
    """The keyword source in this thread (the facts' query on its own connection when
    ``facts_apart``); None when it failed (recorded in ``result``)."""
    from memory.stores.fts import sql_deadline

    keywords = None
    start = time.perf_counter()
    try:
        with sql_deadline(timeouts[SOURCE_KEYWORDS]):
            keywords = keyword_search(
                text, limit=limit, facts_apart=timeouts[SOURCE_KEYWORDS] if facts_apart else None
            )
    except Exception as exc:
        result.failed_sources[SOURCE_KEYWORDS] = failure_text(exc, SOURCE_KEYWORDS)
    result.timings_ms[SOURCE_KEYWORDS] = elapsed_ms(start)
    return keywords
