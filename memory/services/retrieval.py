"""Auto-retrieval, the pre-hook run before every LLM call (DESIGN.md "Retrieval", path 1).

auto_retrieve(message, channel) gathers four sources, each with its own time
limit, their waits overlapping: the query embedding and the Qdrant searches
(and the Obsidian notes) run in worker threads while this thread reads T1 and
FTS5 in SQLite. The ranked lists are fused by reciprocal rank fusion, then
hydrated from T1 (the source of truth: a forgotten fact or a deleted message
never comes back through a stale point), stripped of what the channel already
has (its recent history, what was injected in the last turns, near-duplicates
of those) and capped. The result carries the fenced prompt block and is
logged in memory_retrievals. Nothing here raises: a failing source is skipped
and recorded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.utils import timezone

from memory.models import (
    Fact,
    MemoryRetrieval,
    MemorySettings,
    MemoryType,
    Message,
    MessageRole,
    MessageSource,
    Summary,
)
from memory.services.formatting import (
    NOTE_MAX_CHARS,
    BlockLine,
    block_within_budget,
    clean_text,
    estimate_tokens,
    new_marker,
    relative_time_fr,
)
from memory.services.fusion import reciprocal_rank_fusion

logger = logging.getLogger(__name__)

SOURCE_T1 = "t1"
SOURCE_SEMANTIC = "semantic"
SOURCE_KEYWORDS = "keywords"
SOURCE_NOTES = "notes"
# Memories from the period a message names ("la semaine dernière").
SOURCE_TIME = "time"

CORE_FACTS_MAX = 8
T1_IMPORTANCE = 0.8
T1_LIST_MAX = 12
SUMMARIES_MAX = 2
PREVIEW_CHARS = 200
# How many candidates each source proposes, per memory finally kept.
CANDIDATES_PER_RESULT = 4
CANDIDATES_MIN = 12
# T1's list is context, not relevance: it weighs less than a semantic or keyword hit.
SOURCE_WEIGHTS = {SOURCE_T1: 0.1, SOURCE_SEMANTIC: 1.0, SOURCE_KEYWORDS: 1.0, SOURCE_TIME: 1.0}

# Keyword hits weaker than this fraction of the best bm25 are dropped (see _strong).
KEYWORD_RELATIVE_CUT = 0.5
TIME_EXTRA_MAX = 20
FUSION_HEAD = 40
# How far down the ranked list a newer version of a topic may climb (see _newer_first).
NEWER_FIRST_HEAD = 6

KIND_LABELS = {"exchange": "conversation", "fact": "fait", "summary": "résumé"}

# One pool per slow source: a hanging embedder (or Qdrant) must not starve the
# notes, nor hanging notes the embedding.
_semantic_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="retrieval-semantic")
_notes_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="retrieval-notes")


def retrieval_warm() -> dict[str, float]:
    """Load the embedder, open the stores and embed the gate's reference sentences.

    Called when `serve` starts, so the first message is retrieved as fast as
    the next (a cold embedder would lose the semantic source to its timeout).
    Never raises: a store that is down is warmed by the first real request.
    """
    timings: dict[str, float] = {}
    start = time.perf_counter()
    try:
        from memory.services.relevance import query_background
        from memory.stores.embedders import get_embedder
        from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store

        embedder = get_embedder()
        vector = embedder.embed_query("bonjour")
        timings["embedder"] = _ms(start)
        query_background(embedder, vector)
        store = get_vector_store()
        for collection in (CONVERSATIONS, KNOWLEDGE):
            if store.collection_dimension(collection) is not None:
                store.search(collection, vector, limit=1)
        timings["stores"] = _ms(start)
    except Exception as exc:  # warming is an optimisation, never a failure
        logger.warning("retrieval warm-up incomplete: %s", exc)
    return timings


@dataclass
class RetrievalResult:
    channel: str
    message: str
    memories: list[dict] = field(default_factory=list)
    core: list[dict] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    prompt_block: str = ""
    # The block's marker and kept lines (core, memories, notes): the agent loop
    # rebuilds the same block with the channel's summary inside it.
    marker: str = ""
    block_lines: tuple[list[BlockLine], list[BlockLine], list[BlockLine]] | None = None
    tokens_added: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    total_ms: float = 0.0
    failed_sources: dict[str, str] = field(default_factory=dict)
    retrieval_id: int | None = None
    enabled: bool = True
    # Why nothing was injected, when the relevance gate said so: "small_talk" | "off_topic".
    gate: str = ""


@dataclass
class _Candidate:
    id: str  # "fact:12", "message:34" (an exchange, keyed by its user message), "summary:5"
    kind: str  # fact | exchange | summary
    text: str
    channel: str
    timestamp: datetime
    memory_type: str = ""
    row_ids: tuple[int, ...] = ()


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _failure(exc: BaseException) -> str:
    detail = str(exc) or exc.__class__.__name__
    return f"{exc.__class__.__name__}: {detail}"[:300]


# --- Sources ---------------------------------------------------------------------


def _semantic_search(text: str, *, limit: int, min_score: float | None) -> dict:
    """Runs in a worker thread: no database access here.

    Scores are on the common relevance scale (embedders.relevance_score), so
    ``min_score`` means the same with the local model and with Voyage.
    """
    from memory.stores.embedders import cosine_threshold, get_embedder, relevance_score
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store

    timings = {}
    start = time.perf_counter()
    embedder = get_embedder()
    vector = embedder.embed_query(text)
    timings["embed"] = _ms(start)
    start = time.perf_counter()
    store = get_vector_store()
    threshold = None if min_score is None else cosine_threshold(embedder, min_score)
    hits = []
    for collection in (CONVERSATIONS, KNOWLEDGE):
        for hit in store.search(collection, vector, limit=limit, score_threshold=threshold):
            hits.append((collection, hit, relevance_score(embedder, hit.score)))
    hits.sort(key=lambda triple: -triple[1].score)
    timings["qdrant"] = _ms(start)
    # The relevance gate's evidence: how far the best hit stands above the query's
    # own background (-1 when nothing passed the threshold).
    from memory.services.relevance import query_background

    best = max((hit.score for _, hit, _ in hits), default=None)
    margin = -1.0 if best is None else best - query_background(embedder, vector)
    return {
        "vector": vector,
        "hits": hits,
        "timings": timings,
        "embedder": embedder,
        "margin": margin,
    }


def _notes_fetch(memory_settings: MemorySettings):
    from memory.services.notes import context_notes_get

    return context_notes_get(memory_settings=memory_settings)


def _semantic_ids(hits) -> list[tuple[str, float]]:
    from memory.stores.vectors import CONVERSATIONS

    ranked = []
    for collection, hit, score in hits:
        payload = hit.payload or {}
        row_id = payload.get("row_id") or payload.get("message_id")
        if not row_id:
            continue
        if collection == CONVERSATIONS:
            ranked.append((f"message:{int(row_id)}", score))
        elif payload.get("type") == "summary":
            ranked.append((f"summary:{int(row_id)}", score))
        else:
            ranked.append((f"fact:{int(row_id)}", score))
    return ranked


def _t1_context(
    channel: str, memory_settings: MemorySettings, now: datetime, message_ids: Sequence[int] = ()
) -> tuple[list[Message], list[Fact], list[tuple[str, float]]]:
    """What the LLM already sees, the core (identity) facts, and T1's ranked list.

    What it sees: the history the agent loop sends (memory.selectors.channel_history,
    before the messages being answered) and those messages themselves. Without
    ``message_ids`` (a preview, an outside agent): the history a message sent now
    would get.
    """
    from memory.selectors import channel_history, facts_active

    history = channel_history(
        channel=channel,
        before_id=min(message_ids) if message_ids else None,
        limit=memory_settings.history_length,
    )
    if message_ids:
        history += list(Message.objects.filter(pk__in=message_ids).order_by("id"))
    active = facts_active()
    core = list(
        active.filter(memory_type=MemoryType.IDENTITY).order_by("-importance", "-updated_at")[
            :CORE_FACTS_MAX
        ]
    )
    important = active.exclude(memory_type=MemoryType.IDENTITY).filter(
        importance__gte=T1_IMPORTANCE
    )
    recent = active.exclude(memory_type=MemoryType.IDENTITY).filter(
        created_at__gte=now - timedelta(hours=memory_settings.recent_window_hours)
    )
    ranked: list[tuple[str, float]] = []
    for pk, importance in recent.order_by("-created_at").values_list("id", "importance")[
        :T1_LIST_MAX
    ]:
        ranked.append((f"fact:{pk}", importance))
    for pk, importance in important.order_by("-importance", "-updated_at").values_list(
        "id", "importance"
    )[:T1_LIST_MAX]:
        ranked.append((f"fact:{pk}", importance))
    summaries = Summary.objects.filter(channel=channel).order_by("-created_at")
    for pk in summaries.values_list("id", flat=True)[:SUMMARIES_MAX]:
        ranked.append((f"summary:{pk}", 1.0))
    return history, core, ranked


def _keyword_search(text: str, *, limit: int) -> list[tuple[str, float]]:
    from memory.services.keywords import keyword_terms
    from memory.stores.fts import fts_rank_messages, fts_search_facts

    terms = keyword_terms(text)
    if not terms:
        return []
    messages = _strong(fts_rank_messages(terms, limit=limit))
    facts = _strong(fts_search_facts(terms, limit=limit))
    # A hit on a reply is a hit on its exchange (keyed by the user message), so
    # it fuses with the semantic hit of the same exchange; the best one counts.
    roots = dict(
        Message.objects.filter(pk__in=[m.message_id for m in messages])
        .order_by()
        .values_list("id", "reply_to_id")
    )
    message_ids: list[tuple[int, float]] = []
    seen: set[int] = set()
    for hit in messages:
        root = roots.get(hit.message_id) or hit.message_id
        if root not in seen:
            seen.add(root)
            message_ids.append((root, hit.score))
    # Two indexes whose bm25 scores do not compare: interleave them by rank.
    ranked: list[tuple[str, float]] = []
    for i in range(max(len(message_ids), len(facts))):
        if i < len(message_ids):
            ranked.append((f"message:{message_ids[i][0]}", message_ids[i][1]))
        if i < len(facts):
            ranked.append((f"fact:{facts[i].fact_id}", facts[i].score))
    return ranked


def _strong(hits: list) -> list:
    """Hits whose bm25 is at least KEYWORD_RELATIVE_CUT of the best one.

    An OR query matches any single word; a hit sharing one common word with a
    long message is noise next to one sharing its rare words, and RRF (which
    only sees ranks) would weigh both alike.
    """
    if not hits:
        return hits
    best = hits[0].score
    return [hit for hit in hits if hit.score >= best * KEYWORD_RELATIVE_CUT]


# --- Hydration from T1 -------------------------------------------------------------


def _hydrate(ids: list[str], now: datetime) -> dict[str, _Candidate]:
    """The candidates that still exist in T1, keyed by their (exchange-normalised) id.

    Message ids are mapped to their exchange (the user message they answer);
    the returned dict has an entry for each input id that survives.
    """
    from memory.selectors import facts_active

    by_kind: dict[str, list[int]] = {"fact": [], "message": [], "summary": []}
    for item_id in ids:
        kind, _, raw = item_id.partition(":")
        by_kind[kind].append(int(raw))
    found: dict[str, _Candidate] = {}
    # values() and no ordering: this runs on every message, and the ORM's
    # per-query cost (compiling, instantiating models) is most of it.
    facts = facts_active().filter(pk__in=by_kind["fact"]).order_by()
    for row in facts.values("id", "key", "value", "channel", Fact.DATE_FIELD, "memory_type"):
        found[f"fact:{row['id']}"] = _Candidate(
            id=f"fact:{row['id']}",
            kind="fact",
            text=f"{row['key'].replace('_', ' ')} : {row['value']}",
            channel=row["channel"],
            timestamp=row[Fact.DATE_FIELD],
            memory_type=row["memory_type"],
            row_ids=(row["id"],),
        )
    summaries = Summary.objects.filter(pk__in=by_kind["summary"]).order_by()
    for row in summaries.values("id", "content", "channel", "period_end", "created_at"):
        found[f"summary:{row['id']}"] = _Candidate(
            id=f"summary:{row['id']}",
            kind="summary",
            text=row["content"],
            channel=row["channel"],
            timestamp=row["period_end"] or row["created_at"],
            row_ids=(row["id"],),
        )
    if by_kind["message"]:
        rows = Message.objects.filter(pk__in=by_kind["message"]).order_by()
        root_of = {
            mid: (reply_to or mid) for mid, reply_to in rows.values_list("id", "reply_to_id")
        }
        root_ids = set(root_of.values())
        exchange_rows = (
            Message.objects.filter(
                Q(pk__in=root_ids) | Q(reply_to_id__in=root_ids, role=MessageRole.ASSISTANT)
            )
            .order_by("created_at", "id")
            .values("id", "reply_to_id", "role", "source", "channel", "content", "created_at")
        )
        roots: dict[int, dict] = {}
        replies: dict[int, dict] = {}
        for row in exchange_rows:
            if row["id"] in root_ids:
                roots[row["id"]] = row
            else:
                replies.setdefault(row["reply_to_id"], row)
        for mid, root_id in root_of.items():
            root = roots.get(root_id)
            if (
                root is None
                or root["source"] == MessageSource.SYSTEM
                or root["role"] not in (MessageRole.USER, MessageRole.ASSISTANT)
            ):
                continue
            reply = replies.get(root_id)
            text = f"Utilisateur : {root['content']}"
            if reply is not None:
                text += f" — Assistant : {reply['content']}"
            found[f"message:{mid}"] = _Candidate(
                id=f"message:{root_id}",
                kind="exchange",
                text=text,
                channel=root["channel"],
                timestamp=root["created_at"],
                row_ids=(root_id, reply["id"]) if reply else (root_id,),
            )
    return found


def _recently_injected(channel: str, turns: int) -> set[str]:
    """Ids newly injected into this channel's prompt in its last ``turns`` retrievals.

    Derived from the retrieval log, so a compaction (which rewrites messages,
    not logs) does not reset it. Carried items (below) do not count: each
    memory is carried for ``turns`` turns after it was found, then dropped.
    """
    if turns <= 0:
        return set()
    rows = MemoryRetrieval.objects.filter(channel=channel).order_by("-created_at", "-id")[:turns]
    return {
        item["id"]
        for row in rows
        for item in row.memories
        if "id" in item and not item.get("carried")
    }


def _carried(recent_ids: set[str], kept: list, seen: _Seen, now: datetime) -> list[_Candidate]:
    """The memories injected in the last turns, carried into this prompt.

    The system prompt is rebuilt on every call: a memory injected on turn 1
    lives nowhere on turn 2 unless it is injected again. So what the last
    turns found stays in the block (after this turn's own finds, within the
    token budget), and the near-duplicate check against them is sound: the
    LLM does see them. Re-read from T1: a memory forgotten since is not carried.
    """
    new = {candidate.id for candidate, _ in kept}
    wanted = sorted(recent_ids - new)
    if not wanted:
        return []
    hydrated = _hydrate(wanted, now)
    return [c for c in (hydrated.get(i) for i in wanted) if c is not None and not seen.covers(c)]


@dataclass(frozen=True)
class _Seen:
    """What the LLM already has from its conversation: the history and the channel's summary."""

    message_ids: frozenset[int] = frozenset()
    summary_id: int | None = None

    def covers(self, candidate: _Candidate) -> bool:
        if candidate.kind == "exchange":
            # Only an exchange received whole: a half is still worth injecting.
            return set(candidate.row_ids) <= self.message_ids
        return candidate.kind == "summary" and candidate.row_ids == (self.summary_id,)


def _seen_get(channel: str, history: list[Message]) -> _Seen:
    from memory.selectors import channel_summary_latest

    summary = channel_summary_latest(channel=channel)
    return _Seen(
        message_ids=frozenset(m.pk for m in history),
        summary_id=summary.pk if summary is not None else None,
    )


def _newer_first(
    ids: list[str], *, vectors: dict, timestamps: dict[str, datetime], threshold: float
) -> list[str]:
    """Neighbours that are versions of one topic (cosine >= threshold): the newer goes first.

    "Le code du portail est 1937" then, months later, "le nouveau code est
    4821": both match, the newer is the answer. Only adjacent pairs swap, so a
    newer memory moves up past versions of its own topic, never past others.
    """
    import numpy as np

    ordered = list(ids)
    changed = True
    while changed:
        changed = False
        for i in range(len(ordered) - 1):
            a, b = ordered[i], ordered[i + 1]
            if a not in vectors or b not in vectors:
                continue
            if timestamps[b] > timestamps[a] and float(np.dot(vectors[a], vectors[b])) >= threshold:
                ordered[i], ordered[i + 1] = b, a
                changed = True
    return ordered


def _point_vectors(ids: list[str]) -> dict[str, list[float]]:
    """The stored vectors of memories (by our ids), for near-duplicate checks."""
    from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store, point_id

    wanted: dict[str, list[tuple[str, str]]] = {CONVERSATIONS: [], KNOWLEDGE: []}
    kinds = {"message": KIND_MESSAGE, "fact": KIND_FACT, "summary": KIND_SUMMARY}
    for item_id in ids:
        kind, _, raw = item_id.partition(":")
        collection = CONVERSATIONS if kind == "message" else KNOWLEDGE
        wanted[collection].append((point_id(kinds[kind], int(raw)), item_id))
    store = get_vector_store()
    vectors: dict[str, list[float]] = {}
    for collection, pairs in wanted.items():
        if not pairs:
            continue
        by_point = dict(pairs)
        for hit in store.retrieve(collection, list(by_point), with_vectors=True):
            if hit.vector is not None:
                vectors[by_point[hit.id]] = hit.vector
    return vectors


# --- Fusion ------------------------------------------------------------------------------


def _window_ids(start: datetime, end: datetime) -> list[str]:
    """Memories dated inside [start, end), newest first (the time source's extras)."""
    from memory.selectors import facts_active

    roots = (
        Message.objects.filter(
            created_at__gte=start, created_at__lt=end, reply_to__isnull=True, role=MessageRole.USER
        )
        .exclude(source=MessageSource.SYSTEM)
        .order_by("-created_at")
        .values_list("id", flat=True)[:TIME_EXTRA_MAX]
    )
    from django.db.models.functions import Coalesce

    # Each kind filtered on the same date it is shown with (Fact.date, Summary.date).
    date = Fact.DATE_FIELD
    facts = (
        facts_active()
        .filter(**{f"{date}__gte": start, f"{date}__lt": end})
        .order_by(f"-{date}")
        .values_list("id", flat=True)[:TIME_EXTRA_MAX]
    )
    summaries = (
        Summary.objects.annotate(date=Coalesce("period_end", "created_at"))
        .filter(date__gte=start, date__lt=end)
        .order_by("-date")
        .values_list("id", flat=True)[:TIME_EXTRA_MAX]
    )
    return (
        [f"message:{i}" for i in roots]
        + [f"fact:{i}" for i in facts]
        + [f"summary:{i}" for i in summaries]
    )


def _prefetch(
    ranked: dict[str, list[tuple[str, float]]], *, text: str, now: datetime, tz
) -> tuple[tuple[datetime, datetime] | None, list[str], dict[str, _Candidate]]:
    """What fusion needs that does not depend on the semantic source.

    Run while the query embedding is still being computed: the time window,
    its extra memories, and the T1 hydration of every id found so far.
    """
    from memory.services.timeframe import time_window

    window = time_window(text, now=now, tz=tz)
    extras = _window_ids(*window) if window else []
    ids = [item_id for items in ranked.values() for item_id, _ in items] + extras
    return window, extras, _hydrate(list(dict.fromkeys(ids)), now)


def _fuse(
    ranked: dict[str, list[tuple[str, float]]],
    *,
    text: str,
    now: datetime,
    tz,
    prefetched: tuple | None = None,
) -> tuple[list, dict[str, _Candidate]]:
    """RRF over the sources, plus the time source when the message names a period.

    Returns the fused entries (best first) and their T1 hydration. The time
    source ranks the memories of the period: first those the other sources
    found (in their fused order), then the rest of the period, newest first.
    """
    fused = reciprocal_rank_fusion(ranked, weights=SOURCE_WEIGHTS)[:FUSION_HEAD]
    window, extras, candidates = prefetched or _prefetch({}, text=text, now=now, tz=tz)
    missing = [str(entry.id) for entry in fused if str(entry.id) not in candidates]
    if missing:
        candidates = {**candidates, **_hydrate(missing, now)}
    if window:
        start, end = window
        in_window: dict[str, float] = {}
        for item_id in [str(entry.id) for entry in fused] + extras:
            candidate = candidates.get(item_id)
            if candidate is not None and start <= candidate.timestamp < end:
                in_window.setdefault(candidate.id, 1.0)
        if in_window:
            ranked = {**ranked, SOURCE_TIME: list(in_window.items())}
            fused = reciprocal_rank_fusion(ranked, weights=SOURCE_WEIGHTS)[:FUSION_HEAD]
    return fused, candidates


# --- Ranking without the block (evaluation) ------------------------------------------


def memory_rank(
    *,
    message: str,
    channel: str,
    mode: str = "hybrid",
    limit: int = 20,
    now: datetime | None = None,
    memory_settings: MemorySettings | None = None,
    scores: dict[str, float] | None = None,
) -> tuple[list[str], list[str]]:
    """(always-injected identity facts, memory ids ranked) for a message by one mode.

    Modes: "semantic", "text" or "hybrid". Hybrid ranks as auto_retrieve does
    (T1 + semantic above min_score + keywords, fused) and returns the identity
    facts it always injects apart (they take no slot); it skips what depends
    on the conversation so far (history, past injections). Sources run one
    after the other here: this is for measuring quality (and the hybrid mode
    of search). ``scores``, when given, receives each ranked id's fused score.
    """
    from memory.services.relevance import gate_passes, is_small_talk

    memory_settings = memory_settings or MemorySettings.load()
    now = now or timezone.now()
    text = message[:4000]
    ranked: dict[str, list[tuple[str, float]]] = {}
    core: list[Fact] = []
    if mode == "hybrid" and is_small_talk(text):
        return [], []
    if mode in ("semantic", "hybrid"):
        min_score = memory_settings.min_score if mode == "hybrid" else None
        semantic = _semantic_search(text, limit=limit, min_score=min_score)
        ranked[SOURCE_SEMANTIC] = _semantic_ids(semantic["hits"])
    if mode in ("text", "hybrid"):
        ranked[SOURCE_KEYWORDS] = _keyword_search(text, limit=limit)
    if mode == "hybrid" and not gate_passes(
        margin=semantic["margin"],
        gate_margin=semantic["embedder"].gate_margin,
        semantic_ids=[i for i, _ in ranked[SOURCE_SEMANTIC]],
        keyword_ids=[i for i, _ in ranked[SOURCE_KEYWORDS]],
    ):
        return [], []
    if mode == "hybrid":
        _, core, ranked[SOURCE_T1] = _t1_context(channel, memory_settings, now)
        fused, candidates = _fuse(ranked, text=text, now=now, tz=ZoneInfo(settings.TIME_ZONE))
    else:
        fused = reciprocal_rank_fusion(ranked)
        candidates = _hydrate([str(entry.id) for entry in fused], now)
    core_ids = [f"fact:{fact.pk}" for fact in core]
    ordered: list[str] = []
    timestamps: dict[str, datetime] = {}
    for entry in fused:
        candidate = candidates.get(str(entry.id))
        if candidate is not None and candidate.id not in ordered and candidate.id not in core_ids:
            ordered.append(candidate.id)
            timestamps[candidate.id] = candidate.timestamp
            if scores is not None:
                scores[candidate.id] = float(entry.rrf)
    if mode == "hybrid" and ordered:
        head = ordered[:NEWER_FIRST_HEAD]
        ordered[:NEWER_FIRST_HEAD] = _newer_first(
            head,
            vectors=_point_vectors(head),
            timestamps=timestamps,
            threshold=semantic["embedder"].same_topic_threshold,
        )
    return core_ids, ordered[:limit]


# --- The pre-hook ----------------------------------------------------------------------


def auto_retrieve(
    *, message: str, channel: str, source: str = "user", message_ids: Sequence[int] = ()
) -> RetrievalResult | None:
    """Gather, fuse and log the memories to inject for this message. None when skipped.

    ``message_ids``: the saved messages being answered (the agent loop), so the
    history counted as seen is the one sent with them.
    """
    if source == MessageSource.SYSTEM:
        return None
    memory_settings = MemorySettings.load()
    if not memory_settings.auto_retrieve_enabled:
        return None
    return _retrieve(
        message=message,
        channel=channel,
        memory_settings=memory_settings,
        log=True,
        message_ids=message_ids,
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
) -> RetrievalResult:
    started = time.perf_counter()
    now = timezone.now()
    tz = ZoneInfo(settings.TIME_ZONE)
    timeouts = {k: v / 1000 for k, v in settings.RETRIEVAL_TIMEOUTS_MS.items()}
    result = RetrievalResult(channel=channel, message=message)
    limit = max(CANDIDATES_MIN, memory_settings.max_results * CANDIDATES_PER_RESULT)
    text = message[:4000]
    from memory.services.relevance import gate_passes, is_small_talk

    if is_small_talk(text):
        # "ok", "merci", "👍": the relevance gate injects nothing at all.
        result.gate = "small_talk"
        return _finish(result, started, log=log)

    # 1. Start the slow, database-free sources in worker threads.
    semantic_future: Future = _semantic_pool.submit(
        _semantic_search, text, limit=limit, min_score=memory_settings.min_score
    )
    notes_future: Future | None = None
    if memory_settings.obsidian_context_enabled:
        notes_future = _notes_pool.submit(_notes_fetch, memory_settings)

    # 2. Meanwhile, T1 and FTS5 in this thread (its connection sees this request's data).
    from memory.stores.fts import sql_deadline

    ranked: dict[str, list[tuple[str, float]]] = {}
    history: list[Message] = []
    seen = _Seen()
    core: list[Fact] = []
    start = time.perf_counter()
    try:
        with sql_deadline(timeouts["t1"]):
            history, core, ranked[SOURCE_T1] = _t1_context(
                channel, memory_settings, now, message_ids
            )
            seen = _seen_get(channel, history)
    except Exception as exc:  # never raise from the pre-hook
        result.failed_sources[SOURCE_T1] = _failure(exc)
    result.timings_ms[SOURCE_T1] = _ms(start)

    start = time.perf_counter()
    try:
        with sql_deadline(timeouts["keywords"]):
            ranked[SOURCE_KEYWORDS] = _keyword_search(text, limit=limit)
    except Exception as exc:
        result.failed_sources[SOURCE_KEYWORDS] = _failure(exc)
    result.timings_ms[SOURCE_KEYWORDS] = _ms(start)

    # Hydrate what T1 and keywords found while the embedding is still running.
    start = time.perf_counter()
    prefetched = None
    recent_ids: set[str] = set()
    try:
        recent_ids = _recently_injected(channel, memory_settings.reinjection_turns)
        prefetched = _prefetch(ranked, text=text, now=now, tz=tz)
    except Exception as exc:  # never raise from the pre-hook; _fuse hydrates what is missing
        result.failed_sources["prefetch"] = _failure(exc)
    result.timings_ms["prefetch"] = _ms(start)

    # 3. Collect the threads, each within what is left of its own time limit.
    semantic = _collect(semantic_future, SOURCE_SEMANTIC, timeouts["semantic"], started, result)
    embedder = None
    if semantic is not None:
        ranked[SOURCE_SEMANTIC] = _semantic_ids(semantic["hits"])
        result.timings_ms.update(semantic["timings"])
        embedder = semantic["embedder"]
    notes = None
    if notes_future is not None:
        notes = _collect(notes_future, SOURCE_NOTES, timeouts["notes"], started, result)
        if notes is not None:
            for name, reason in notes.failures.items():
                result.failed_sources[f"{SOURCE_NOTES}:{name}"] = reason

    # The relevance gate: does any source's evidence say the memory holds this topic?
    if (embedder is not None or semantic is None) and not gate_passes(
        margin=semantic["margin"] if semantic is not None else None,
        gate_margin=embedder.gate_margin if embedder is not None else 1.0,
        semantic_ids=[i for i, _ in ranked.get(SOURCE_SEMANTIC, [])],
        keyword_ids=[i for i, _ in ranked.get(SOURCE_KEYWORDS, [])],
    ):
        # Nothing new about this message; what the last turns found is still carried.
        result.gate = "off_topic"
        ranked, core, notes = {}, [], None

    # 4. Fuse, hydrate from T1, drop what the channel already has, cap.
    start = time.perf_counter()
    try:
        if not ranked:
            raise _Gated
        fused, candidates = _fuse(ranked, text=text, now=now, tz=tz, prefetched=prefetched)
        kept = _select(
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
        logger.exception("auto-retrieval fusion failed")
        result.failed_sources["fusion"] = _failure(exc)
        kept = []
    result.timings_ms["fusion"] = _ms(start)

    # 5. Format the block.
    result.history = history
    result.core = [_fact_dict(f, now, tz) for f in core]
    result.memories = [_memory_dict(c, entry, now, tz) for c, entry in kept]
    try:
        carried = _carried(recent_ids, kept, seen, now)
    except Exception as exc:  # never raise from the pre-hook
        result.failed_sources["carried"] = _failure(exc)
        carried = []
    result.memories += [_memory_dict(c, None, now, tz) for c in carried]
    result.notes = [
        {
            "path": n.path,
            "source": n.source,
            "text": clean_text(n.excerpt, max_chars=NOTE_MAX_CHARS),
        }
        for n in (notes.notes if notes is not None else [])
    ]
    # Tagged notes most related to the message first (fixed notes keep their place).
    from memory.services.relevance import content_words

    words = set(content_words(text))
    fixed = [n for n in result.notes if n["source"] == "fixed"]
    tagged = [n for n in result.notes if n["source"] != "fixed"]
    tagged.sort(key=lambda n: -len(words & set(content_words(n["text"]))))
    result.notes = fixed + tagged
    core_lines = [
        BlockLine(_label("fait", f["type"], f["channel"], f["relative_time"]), f["text"])
        for f in result.core
    ]
    memory_lines = [
        BlockLine(
            _label(KIND_LABELS[m["kind"]], m["type"], m["channel"], m["relative_time"]),
            m["text"],
        )
        for m in result.memories
    ]
    note_lines = [BlockLine(f"note · {n['path']}", n["text"]) for n in result.notes]
    marker = new_marker()
    block, (core_i, memories_i, notes_i) = block_within_budget(
        core=core_lines,
        memories=memory_lines,
        notes=note_lines,
        marker=marker,
        max_tokens=memory_settings.block_max_tokens,
    )
    result.prompt_block = block
    result.marker = marker
    result.block_lines = (
        [core_lines[i] for i in core_i],
        [memory_lines[i] for i in memories_i],
        [note_lines[i] for i in notes_i],
    )
    result.core = [result.core[i] for i in core_i]
    result.memories = [result.memories[i] for i in memories_i]
    result.notes = [result.notes[i] for i in notes_i]
    result.tokens_added = estimate_tokens(result.prompt_block)
    return _finish(result, started, log=log)


def _finish(result: RetrievalResult, started: float, *, log: bool) -> RetrievalResult:
    """Time the run and log it (unless a preview)."""
    if log:
        start = time.perf_counter()
        result.timings_ms["log"] = 0.0
        result.total_ms = _ms(started)
        result.timings_ms["total"] = result.total_ms
        result.retrieval_id = _log(result)
        result.timings_ms["log"] = _ms(start)
    result.total_ms = _ms(started)
    result.timings_ms["total"] = result.total_ms
    return result


class _Gated(Exception):
    """The relevance gate said no: nothing to fuse."""


def _collect(future: Future, name: str, limit_s: float, started: float, result: RetrievalResult):
    remaining = max(0.0, limit_s - (time.perf_counter() - started))
    try:
        return future.result(timeout=remaining)
    except FutureTimeout:
        future.cancel()
        result.failed_sources[name] = f"timeout after {int(limit_s * 1000)} ms"
    except Exception as exc:
        result.failed_sources[name] = _failure(exc)
    return None


def _select(*, fused, candidates, recent_ids, seen, core, memory_settings, embedder, result):
    """The fused entries to inject, hydrated, in order, at most max_results.

    Only the head of the fused list is hydrated and checked (a few times
    max_results): the tail could never be injected anyway.
    """
    wanted = memory_settings.max_results
    head = fused[: max(CANDIDATES_MIN, wanted * CANDIDATES_PER_RESULT)]
    core_ids = {f"fact:{f.pk}" for f in core}

    selected: list[tuple[_Candidate, object]] = []
    taken: set[str] = set()
    for entry in head:
        candidate = candidates.get(str(entry.id))
        if candidate is None or candidate.id in taken or candidate.id in core_ids:
            continue
        taken.add(candidate.id)
        if seen.covers(candidate):
            continue  # already in the conversation the LLM receives
        if candidate.id in recent_ids:
            continue
        selected.append((candidate, entry))
        if len(selected) >= wanted * 2:
            break
    if embedder is None or not selected or not (recent_ids or len(selected) > 1):
        return selected[:wanted]

    try:
        vectors = _point_vectors([c.id for c, _ in selected] + sorted(recent_ids))
    except Exception as exc:
        result.failed_sources["near_duplicates"] = _failure(exc)
        return selected[:wanted]
    import numpy as np

    # A newer version of a topic before the older one.
    by_id = {c.id: (c, entry) for c, entry in selected}
    head = _newer_first(
        [c.id for c, _ in selected[:NEWER_FIRST_HEAD]],
        vectors=vectors,
        timestamps={c.id: c.timestamp for c, _ in selected},
        threshold=embedder.same_topic_threshold,
    )
    selected = [by_id[i] for i in head] + selected[NEWER_FIRST_HEAD:]

    # Near-duplicates of what was injected in the last turns, or of each other.
    threshold = embedder.near_duplicate_threshold
    kept = [vectors[i] for i in recent_ids if i in vectors]
    deduped = []
    for candidate, entry in selected:
        vector = vectors.get(candidate.id)
        # Stored vectors are L2-normalised: the dot product is the cosine.
        if vector is not None and kept and float(np.max(np.asarray(kept) @ vector)) >= threshold:
            continue
        deduped.append((candidate, entry))
        if vector is not None:
            kept.append(vector)
        if len(deduped) >= wanted:
            break
    return deduped


def _label(kind: str, memory_type: str, channel: str, relative: str) -> str:
    parts = [MemoryType(memory_type).label.lower()] if memory_type in MemoryType.values else [kind]
    if channel:
        parts.append(channel)
    parts.append(relative)
    return " · ".join(parts)


def _fact_dict(fact: Fact, now: datetime, tz) -> dict:
    return {
        "id": f"fact:{fact.pk}",
        "kind": "fact",
        "key": fact.key,
        "text": clean_text(f"{fact.key.replace('_', ' ')} : {fact.value}"),
        "type": fact.memory_type,
        "channel": fact.channel,
        "timestamp": fact.date.isoformat(),
        "relative_time": relative_time_fr(fact.date, now=now, tz=tz),
        # Always injected (identity and core facts): found by no ranked source.
        "sources": {},
        "score": None,
    }


def _memory_dict(candidate: _Candidate, entry, now: datetime, tz) -> dict:
    """A memory of the block; ``entry`` None: carried from the last turns (see _carried)."""
    if entry is None:
        return {
            "id": candidate.id,
            "kind": candidate.kind,
            "text": clean_text(candidate.text),
            "type": candidate.memory_type,
            "channel": candidate.channel,
            "timestamp": candidate.timestamp.isoformat(),
            "relative_time": relative_time_fr(candidate.timestamp, now=now, tz=tz),
            "sources": {},
            "rrf": 0.0,
            "score": None,
            "carried": True,
        }
    scores = [s["score"] for name, s in entry.sources.items() if name == SOURCE_SEMANTIC]
    return {
        "id": candidate.id,
        "kind": candidate.kind,
        "text": clean_text(candidate.text),
        "type": candidate.memory_type,
        "channel": candidate.channel,
        "timestamp": candidate.timestamp.isoformat(),
        "relative_time": relative_time_fr(candidate.timestamp, now=now, tz=tz),
        "sources": entry.sources,
        "rrf": round(entry.rrf, 6),
        "score": scores[0] if scores else None,
    }


def _log(result: RetrievalResult) -> int | None:
    from memory.services.facts import facts_accessed

    try:
        facts_accessed(
            int(m["id"].split(":")[1])
            for m in result.memories
            if m["kind"] == "fact" and not m.get("carried")
        )
        row = MemoryRetrieval.objects.create(
            channel=result.channel,
            message_preview=clean_text(result.message, max_chars=PREVIEW_CHARS),
            memories=[
                {
                    "id": m["id"],
                    "kind": m["kind"],
                    "sources": m["sources"],
                    "rrf": m["rrf"],
                    "score": m["score"],
                    "text": m["text"][:PREVIEW_CHARS],
                    **({"carried": True} if m.get("carried") else {}),
                }
                for m in result.memories
            ],
            notes=[{"path": n["path"], "chars": len(n["text"])} for n in result.notes],
            tokens_added=result.tokens_added,
            timings_ms=result.timings_ms,
            total_ms=result.total_ms,
            failed_sources=result.failed_sources,
        )
    except DatabaseError:
        logger.exception("could not log the auto-retrieval")
        return None
    return row.pk
