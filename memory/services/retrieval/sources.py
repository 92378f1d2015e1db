"""The ranked sources of auto-retrieval: keywords (FTS5), T1, time, notes; the semantic
source (Qdrant) has its module, memory.services.retrieval.semantic.

The semantic and notes sources run in worker threads (no database access
there); T1, keywords and the time source read SQLite in the caller's thread.
Each returns a ranked list of memory ids: "fact:12", "message:34" (an
exchange, keyed by its user message), "summary:5".
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import NamedTuple

from memory.models import (
    Fact,
    MemorySettings,
    Message,
    MessageRole,
    MessageSource,
    Summary,
)
from memory.services.fusion import interleaved
from memory.services.relevance import content_words
from memory.services.retrieval.candidates import Seen
from memory.services.retrieval.facts_view import FactsView, facts_view
from memory.stores.compiled import CompiledRead, ids_in, param

SOURCE_T1 = "t1"
SOURCE_SEMANTIC = "semantic"
SOURCE_KEYWORDS = "keywords"
SOURCE_NOTES = "notes"
# Memories from the period a message names ("la semaine dernière").
SOURCE_TIME = "time"

SUMMARIES_MAX = 2
# Keyword hits weaker than this fraction of the best bm25 are dropped (see strong_hits).
KEYWORD_RELATIVE_CUT = 0.5
TIME_EXTRA_MAX = 20


def notes_fetch(memory_settings: MemorySettings):
    from memory.services.notes import context_notes_get

    return context_notes_get(memory_settings=memory_settings)


class T1Context(NamedTuple):
    history: list[Message]
    seen: Seen  # the history's ids and the channel's latest summary
    core: list[Fact]
    ranked: list[tuple[str, float]]
    facts: FactsView  # the facts read for this message (the self and goals lines too)


def t1_context(
    channel: str, memory_settings: MemorySettings, now: datetime, message_ids: Sequence[int] = ()
) -> T1Context:
    """What the LLM already sees, the core (identity) facts, and T1's ranked list.

    What it sees: the history the agent loop sends (memory.selectors.channel_history,
    before the messages being answered) and those messages themselves. Without
    ``message_ids`` (a preview, an outside agent): the history a message sent now
    would get.
    """
    from memory.selectors import channel_history

    history = channel_history(
        channel=channel,
        before_id=min(message_ids) if message_ids else None,
        limit=memory_settings.history_length,
    )
    if message_ids:
        history += list(Message.objects.filter(pk__in=message_ids).order_by("id"))
    facts = facts_view(now)
    ranked: list[tuple[str, float]] = [
        (f"fact:{pk}", importance)
        for pk, importance in facts.recent_at(
            now, timedelta(hours=memory_settings.recent_window_hours)
        )
    ]
    ranked += [(f"fact:{pk}", importance) for pk, importance in facts.important]
    # Newest first: the first is the summary the agent's prompt carries (channel_summary_latest).
    summary_ids = [pk for (pk,) in _SUMMARY_IDS.rows(channel=channel)]
    ranked += [(f"summary:{pk}", 1.0) for pk in summary_ids]
    seen = Seen(
        message_ids=frozenset(m.pk for m in history),
        summary_id=summary_ids[0] if summary_ids else None,
        said=tuple(frozenset(content_words(m.content)) for m in history),
    )
    return T1Context(history, seen, list(facts.core), ranked, facts)


def _summary_ids(_now: datetime):
    from memory.selectors import channel_summaries

    return channel_summaries(channel=param("channel")).values_list("id")[:SUMMARIES_MAX]


def _exchange_roots(_now: datetime):
    """(id, reply_to_id) of the messages of ``ids`` still in the memory (the keyword hits)."""
    return Message.objects.filter(pk__in=ids_in()).order_by().values_list("id", "reply_to_id")


# Compiled once: both run on every message (memory.stores.compiled).
_SUMMARY_IDS = CompiledRead(_summary_ids)
_EXCHANGE_ROOTS = CompiledRead(_exchange_roots)


# The facts' keyword query on a thread and connection of its own, beside the messages'
# (keyword_search's ``facts_apart``), and the database that connection was opened on.
_facts_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="retrieval-facts")
_facts_thread = threading.local()


def keyword_search(
    text: str, *, limit: int, facts_apart: float | None = None
) -> list[tuple[str, float]]:
    """The keyword source: FTS5's bm25 over the owner's exchanges, facts and summaries,
    interleaved by rank (three indexes whose scores do not compare).

    ``facts_apart``: the facts' query runs on a connection of its own in another
    thread, within that many seconds, while this thread ranks the messages. Each
    ranks in C without the GIL, so a query alone on the machine uses both cores (at
    100,000 memories, 5.7 and 4.8 ms bare; the pre-hook's keyword stage p50 10.4 ->
    7.8 ms). Only for a caller outside any transaction: another connection would
    not see its uncommitted rows. What either finds is hydrated on the caller's
    connection, so a fact forgotten meanwhile is still dropped there.
    """
    from memory.services.keywords import keyword_terms
    from memory.stores.fts import fts_rank_messages, fts_rank_summaries, fts_search_facts

    terms = keyword_terms(text)
    if not terms:
        return []
    facts_future = None
    if facts_apart is not None:
        facts_future = _facts_pool.submit(_facts_on_own_connection, terms, limit, facts_apart)
    messages = strong_hits(fts_rank_messages(terms, limit=limit))
    summaries = strong_hits(fts_rank_summaries(terms, limit=limit))
    if facts_future is not None:
        facts = strong_hits(facts_future.result(timeout=facts_apart))
    else:
        facts = strong_hits(fts_search_facts(terms, limit=limit))
    # A hit on a reply is a hit on its exchange (keyed by the user message), so
    # it fuses with the semantic hit of the same exchange; the best one counts.
    # Observed rooms' messages are not ranked (fts_rank_messages): they reach the block as
    # live extracts.
    roots = dict(_EXCHANGE_ROOTS.rows(ids=[m.message_id for m in messages]))
    messages = [hit for hit in messages if hit.message_id in roots]
    message_ids: list[tuple[int, float]] = []
    seen: set[int] = set()
    for hit in messages:
        root = roots.get(hit.message_id) or hit.message_id
        if root not in seen:
            seen.add(root)
            message_ids.append((root, hit.score))
    # Three indexes whose bm25 scores do not compare: interleave them by rank.
    lists = (
        [(f"message:{pk}", score) for pk, score in message_ids],
        [(f"fact:{hit.fact_id}", hit.score) for hit in facts],
        [(f"summary:{hit.summary_id}", hit.score) for hit in summaries],
    )
    return interleaved(lists)


def _facts_on_own_connection(terms: list[str], limit: int, timeout_s: float) -> list:
    """fts_search_facts on the pool thread's own connection, within ``timeout_s``."""
    from memory.stores.fts import fts_search_facts, sql_deadline
    from memory.stores.thread_connection import connection_follow

    _facts_thread.opened_on = connection_follow(getattr(_facts_thread, "opened_on", None))
    with sql_deadline(timeout_s):
        return fts_search_facts(terms, limit=limit)


def strong_hits(hits: list) -> list:
    """Hits whose bm25 is at least KEYWORD_RELATIVE_CUT of the best one.

    An OR query matches any single word; a hit sharing one common word with a
    long message is noise next to one sharing its rare words, and RRF (which
    only sees ranks) would weigh both alike.
    """
    if not hits:
        return hits
    best = hits[0].score
    return [hit for hit in hits if hit.score >= best * KEYWORD_RELATIVE_CUT]


def window_ids(start: datetime, end: datetime) -> list[str]:
    """Memories dated inside [start, end), newest first (the time source's extras).

    Only the exchanges worth a point (index_documents.exchange_wanted): an unanswered
    « Tu vas bien ? », « merci » → « D'accord. » are in no other source either, and the
    time source, which takes a period's memories whatever they say, injected them.
    """
    from memory.selectors import facts_active

    roots = _window_exchanges(start, end)
    # Each kind filtered on the same date it is shown with (Fact.date, Summary.date).
    date = Fact.DATE_FIELD
    facts = (
        facts_active()
        .filter(**{f"{date}__gte": start, f"{date}__lt": end})
        .order_by(f"-{date}")
        .values_list("id", flat=True)[:TIME_EXTRA_MAX]
    )
    summaries = (
        Summary.objects.annotate(date=Summary.date_expression())
        .filter(date__gte=start, date__lt=end)
        .order_by("-date")
        .values_list("id", flat=True)[:TIME_EXTRA_MAX]
    )
    return (
        [f"message:{i}" for i in roots]
        + [f"fact:{i}" for i in facts]
        + [f"summary:{i}" for i in summaries]
    )


# How many exchange roots of a period the time source reads at a time, and at most in all:
# those without a point (exchange_wanted) are skipped, the next ones read in their place.
TIME_EXCHANGES_CHUNK = TIME_EXTRA_MAX * 3
TIME_EXCHANGES_READ_MAX = TIME_EXCHANGES_CHUNK * 5


def _window_exchanges(start: datetime, end: datetime) -> list[int]:
    """The roots of the owner's exchanges dated inside [start, end) that are worth a point,
    newest first, at most TIME_EXTRA_MAX: each read with its first reply's text (the one
    the index and the hydration pair it with) in one statement per chunk."""
    from django.db.models import OuterRef, Subquery

    from memory.services.index_documents import exchange_texts_wanted

    first_reply = (
        Message.objects.filter(reply_to_id=OuterRef("pk"), role=MessageRole.ASSISTANT)
        .order_by("created_at", "id")
        .values("content")[:1]
    )
    rows = (
        Message.objects.filter(
            created_at__gte=start, created_at__lt=end, reply_to__isnull=True, role=MessageRole.USER
        )
        .exclude(source=MessageSource.SYSTEM)
        .exclude(observed=True)
        .annotate(reply_content=Subquery(first_reply))
        .order_by("-created_at", "-id")
        .values_list("id", "content", "reply_content")
    )
    kept: list[int] = []
    for offset in range(0, TIME_EXCHANGES_READ_MAX, TIME_EXCHANGES_CHUNK):
        chunk = list(rows[offset : offset + TIME_EXCHANGES_CHUNK])
        for pk, content, reply in chunk:
            if exchange_texts_wanted(content, reply):
                kept.append(pk)
                if len(kept) >= TIME_EXTRA_MAX:
                    return kept
        if len(chunk) < TIME_EXCHANGES_CHUNK:
            break
    return kept
