"""The pre-hook: auto_retrieve runs the sources concurrently, each within its own time limit.

The query embedding and the Qdrant searches (and the Obsidian notes) run in
worker threads while this thread reads FTS5 and T1 in SQLite (after the vector
when the bundled engine embeds the query on every core, the keywords then ranked
in their own process: memory.services.keywords_process); then the gate, fusion,
selection, the block and the log. Nothing here raises: a failing source is
skipped and recorded.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.models import MemorySettings, MessageSource
from memory.services.keywords_process import keywords_request
from memory.services.retrieval.block import block_fill, self_block_fill
from memory.services.retrieval.live import SOURCE_LIVE, live_hydrate, live_search
from memory.services.retrieval.log import retrieval_log_start
from memory.services.retrieval.ranking import fuse
from memory.services.retrieval.result import (
    RetrievalResult,
    elapsed_ms,
    failure_text,
    source_collect,
)
from memory.services.retrieval.selection import (
    CANDIDATES_MIN,
    CANDIDATES_PER_RESULT,
    select_memories,
)
from memory.services.retrieval.semantic import semantic_ids, semantic_search
from memory.services.retrieval.sources import (
    SOURCE_KEYWORDS,
    SOURCE_NOTES,
    SOURCE_SEMANTIC,
    notes_fetch,
)
from memory.services.retrieval.sql_stage import sql_sources

logger = logging.getLogger(__name__)

# One pool per slow source: a hanging embedder (or Qdrant) must not starve the
# notes, nor hanging notes the embedding.
_semantic_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="retrieval-semantic")
_notes_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="retrieval-notes")
_live_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="retrieval-live")
# How long the caller waits for the embedding to start before reading SQLite.
EMBEDDING_START_WAIT_S = 0.005


def auto_retrieve(
    *,
    message: str,
    channel: str,
    source: str = "user",
    message_ids: Sequence[int] = (),
    summary: str = "",
) -> RetrievalResult | None:
    """Gather, fuse and log the memories to inject for this message. None when skipped.

    ``message_ids``: the saved messages being answered (the agent loop), so the
    history counted as seen is the one sent with them. ``summary``: the channel's
    summary the caller's prompt carries, put in the block within its budget.
    """
    if source == MessageSource.SYSTEM:
        return None
    memory_settings = MemorySettings.load()
    if not memory_settings.auto_retrieve_enabled:
        return None
    from memory.stores.local_engine import embedding_expected

    with embedding_expected():
        return _retrieve(
            message=message,
            channel=channel,
            memory_settings=memory_settings,
            log=True,
            message_ids=message_ids,
            summary=summary,
        )


def auto_retrieve_preview(*, message: str, channel: str) -> RetrievalResult:
    """What auto_retrieve would inject now, without logging it (the /memory preview box)."""
    memory_settings = MemorySettings.load()
    result = _retrieve(message=message, channel=channel, memory_settings=memory_settings, log=False)
    result.enabled = memory_settings.auto_retrieve_enabled
    return result


def _retrieve(
    *,
    message: str,
    channel: str,
    memory_settings: MemorySettings,
    log: bool,
    message_ids: Sequence[int] = (),
    summary: str = "",
) -> RetrievalResult:
    started = time.perf_counter()
    now = timezone.now()
    tz = ZoneInfo(settings.TIME_ZONE)
    timeouts = {k: v / 1000 for k, v in settings.RETRIEVAL_TIMEOUTS_MS.items()}
    result = RetrievalResult(channel=channel, message=message, summary=summary)
    limit = max(CANDIDATES_MIN, memory_settings.max_results * CANDIDATES_PER_RESULT)
    text = message[:4000]
    from memory.services.language import text_language
    from memory.services.notes_relevance import notes_about
    from memory.services.relevance import content_words, gate_passes, is_small_talk

    if is_small_talk(text):
        # "ok", "merci", "👍": the relevance gate recalls nothing at all.
        result.gate = "small_talk"
        # Who the agent is, and the channel's summary (conversation context), still go in.
        self_block_fill(result, memory_settings=memory_settings)
        return _finish(result, started, log=log)

    # 1. Start the slow, database-free sources in worker threads.
    language = text_language(text)  # read once, for the semantic and the live searches
    every_core = embeds_on_every_core()
    embedding = threading.Event()
    vector_ready: Future = Future()
    # Alone on the machine, the keywords are ranked in their own process once the
    # vector exists (memory.services.keywords_process), beside the searches and T1.
    keywords_apart = (
        keywords_request(text, limit=limit, timeout_s=timeouts[SOURCE_KEYWORDS])
        if every_core
        else None
    )
    semantic_future: Future = _semantic_pool.submit(
        semantic_search,
        text,
        limit=limit,
        min_score=memory_settings.min_score,
        started=embedding.set,
        embedded=vector_ready,
        on_vector=keywords_apart.send if keywords_apart is not None else None,
        embed_timeout_s=timeouts[SOURCE_SEMANTIC],
        query_language=language,
    )
    live_future: Future | None = None
    if memory_settings.live_max_results:
        live_future = _live_pool.submit(
            live_search,
            vector_ready,
            query_words=set(content_words(text)),
            exclude_room=channel,
            query_language=language,
            limit=memory_settings.live_max_results,
            min_score=memory_settings.min_score,
            wait_s=timeouts[SOURCE_LIVE],
        )
    notes_future: Future | None = None
    if memory_settings.obsidian_context_enabled:
        notes_future = _notes_pool.submit(notes_fetch, memory_settings)
    # The ORM work below holds the GIL for up to a switch interval (5 ms) at a
    # time: let the embedding thread reach the engine (which runs without the
    # GIL) first, instead of queueing behind it.
    embedding.wait(EMBEDDING_START_WAIT_S)
    if every_core:
        # A query embedded on every core runs as a team that meets at a barrier after
        # each step: SQL beside it takes a core, stalls the team at every barrier and
        # slowed the embedding by more than the SQL's own length (10,000 memories:
        # embedding 21.7 -> 13.2 ms, pre-hook p50 28.1 -> 24.4 ms and p95 36.3 -> 28.0
        # when the SQL waits). On one thread (concurrent callers, an indexing batch)
        # or over the network (Voyage), the SQL runs beside the embedding as before.
        # Before the embedding instead, alone on the machine, it measured the same
        # (alternating on one store: 10,000 memories p50 27.3 / p95 36.2 ms either
        # way; 100,000: 36.6 / 46.1 against 37.2 / 46.4).
        wait([vector_ready], timeout=timeouts[SOURCE_SEMANTIC])

    # 2. T1 and FTS5 in this thread (its connection sees this request's data).
    # Alone on the machine after the vector, the facts' keyword query takes the other
    # core (keyword_search); under load, or inside the caller's transaction, it does not.
    ranked, history, seen, core, agent_lines, recent_ids, prefetched = sql_sources(
        text,
        channel,
        memory_settings=memory_settings,
        limit=limit,
        now=now,
        tz=tz,
        message_ids=message_ids,
        timeouts=timeouts,
        result=result,
        facts_apart=every_core and not connection.in_atomic_block,
        keywords_apart=keywords_apart,
        semantic_future=semantic_future,
    )

    # 3. Collect the threads, each within what is left of its own time limit.
    semantic = source_collect(
        semantic_future, SOURCE_SEMANTIC, timeouts["semantic"], started, result
    )
    embedder = None
    if semantic is not None:
        ranked[SOURCE_SEMANTIC] = semantic_ids(semantic["hits"])
        result.timings_ms.update(semantic["timings"])
        embedder = semantic["embedder"]
    notes = None
    if notes_future is not None:
        notes = source_collect(notes_future, SOURCE_NOTES, timeouts["notes"], started, result)
        if notes is not None:
            for name, reason in notes.failures.items():
                result.failed_sources[f"{SOURCE_NOTES}:{name}"] = reason

    # The observed rooms: their own gate per hit (a new fact there is not in the memory yet).
    live = None
    if live_future is not None:
        live = source_collect(live_future, SOURCE_LIVE, timeouts[SOURCE_LIVE], started, result)
    live_items: list[dict] = []
    if live is not None:
        result.timings_ms.update(live["timings"])
        try:
            live_items = live_hydrate(live["hits"], now=now, tz=tz)
        except Exception as exc:  # never raise from the pre-hook
            result.failed_sources[SOURCE_LIVE] = failure_text(exc, SOURCE_LIVE)

    # The relevance gate: does any source's evidence say the memory holds this topic?
    # Two sources agreeing on the channel's own history (dropped below as seen) say
    # nothing about what the memory holds: only unseen ids count as agreement.
    if (embedder is not None or semantic is None) and not gate_passes(
        margin=semantic["margin"] if semantic is not None else None,
        gate_margin=embedder.gate_margin if embedder is not None else 1.0,
        semantic_ids=seen.unseen(ranked.get(SOURCE_SEMANTIC, [])),
        keyword_ids=seen.unseen(ranked.get(SOURCE_KEYWORDS, [])),
    ):
        # Nothing new about this message; what the last turns found is still carried,
        # and a context note the message is about still comes (notes_about).
        notes = notes_about(notes, text, tag=memory_settings.obsidian_context_tag)
        result.gate = "off_topic" if notes is None else ""
        ranked, core = {}, []

    # 4. Fuse, hydrate from T1, drop what the channel already has, cap.
    start = time.perf_counter()
    try:
        if not ranked:
            raise _Gated
        fused, candidates = fuse(ranked, text=text, now=now, tz=tz, prefetched=prefetched)
        kept = select_memories(
            fused=fused,
            candidates=candidates,
            recent_ids=recent_ids,
            seen=seen,
            core=core,
            memory_settings=memory_settings,
            embedder=embedder,
            result=result,
        )
    except _Gated:
        kept = []
    except Exception as exc:
        result.failed_sources["fusion"] = failure_text(exc, "fusion")
        kept = []
    result.timings_ms["fusion"] = elapsed_ms(start)

    # 5. Format the block.
    block_fill(
        result,
        history=history,
        core=core,
        kept=kept,
        recent_ids=recent_ids,
        seen=seen,
        notes=notes,
        hydrated=prefetched[2] if prefetched is not None else None,
        live=live_items,
        text=text,
        memory_settings=memory_settings,
        now=now,
        tz=tz,
        agent_lines=agent_lines,
    )
    return _finish(result, started, log=log)


def embeds_on_every_core() -> bool:
    """The query will be embedded by the bundled engine on a team of every core (then
    the SQL waits for the vector, and the keywords may go to their process)."""
    from memory.stores.embedders import LocalEmbedder, get_embedder
    from memory.stores.local_engine import query_gets_every_core

    try:
        return isinstance(get_embedder(), LocalEmbedder) and query_gets_every_core()
    except Exception:  # no embedder: the semantic source fails on its own
        return False


def _finish(result: RetrievalResult, started: float, *, log: bool) -> RetrievalResult:
    """Time the run and log it (unless a preview), off the critical path (log.py)."""
    if log:
        start = time.perf_counter()
        result.timings_ms["log"] = 0.0
        result.total_ms = elapsed_ms(started)
        result.timings_ms["total"] = result.total_ms
        retrieval_log_start(result)
        result.timings_ms["log"] = elapsed_ms(start)
    result.total_ms = elapsed_ms(started)
    result.timings_ms["total"] = result.total_ms
    return result


class _Gated(Exception):
    """The relevance gate said no: nothing to fuse."""
