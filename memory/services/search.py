"""Searching the memory on demand: by meaning (Qdrant) or by words (FTS5 + facts).

This is the search of the /memory page and of GET /api/memory/search, not the
automatic pre-hook (memory.services.retrieval). Both modes answer the same
SearchHit shape (memory.services.search_hits) so a caller can show them the
same way.

Semantic mode (memory.services.search_semantic) embeds the query and searches
the two Qdrant collections with the settings' ``search_min_score``. Qdrant is
derived data: a fact hit is checked against T1 so a fact forgotten or expired
since it was indexed is never shown, and its current value is shown rather
than the indexed one.

Text mode (memory.services.search_text) needs nothing but SQLite: messages,
facts and summaries ranked by FTS5's bm25, the rows holding every meaningful
word first, then those holding some.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Literal

from django.core.exceptions import ValidationError

from memory.exceptions import DimensionMismatch, StoreUnavailable
from memory.models import Fact, MemoryType, Summary
from memory.selectors import facts_active
from memory.services.search_hits import (
    SearchHit,
    exchange_hit,
    exchanges_read,
    fact_hit,
    summary_hit,
)
from memory.services.search_semantic import (
    ROOMS_SOURCE,
    SEMANTIC_UNAVAILABLE_MESSAGE,
    rooms_placed,
    semantic_hits,
)

logger = logging.getLogger(__name__)

SearchMode = Literal["semantic", "text", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("semantic", "text", "hybrid")
MAX_LIMIT = 50
# The longest query a search reads (the API, MCP, /memory and the agent's self search).
QUERY_MAX_CHARS = 500


@dataclass(frozen=True)
class SearchFilters:
    """Optional filters of a search: channel, memory type, subjects (any of), date range."""

    channel: str = ""
    memory_type: str = ""
    subjects: tuple[str, ...] = ()
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive

    def fact_where(self, now: datetime | None = None) -> list[tuple[str, object]]:
        """The filters on a fact's row (dated by Fact.date), as fts.fact_filters_sql's
        ``where``; with ``now``, not expired then."""
        from memory.stores.fts import fact_filters_sql

        return fact_filters_sql(
            channel=self.channel,
            memory_type=self.memory_type,
            subjects=self.subjects,
            since=self.since,
            until=self.until,
            date_column=Fact.DATE_FIELD,
            now=now,
        )


BAD_DATE_MESSAGE = "Date invalide : « {value} » (attendu AAAA-MM-JJ ou une date ISO 8601)."
# The dates a filter or a message may carry: far from the calendar's ends, where moving a
# moment to UTC or by a day overflows.
DATE_YEARS = (1000, 9998)
DATE_RANGE_MESSAGE = (
    f"Date hors de l'intervalle accepté (de l'an {DATE_YEARS[0]} à l'an {DATE_YEARS[1]})."
)
# A date of the right form that is not in the calendar (« 2026-02-30 », an offset « +25:00 »).
NO_SUCH_DATE_MESSAGE = (
    "La date « {value} » n'existe pas : son jour, son mois, son heure ou son décalage "
    "horaire sort des limites."
)
DATE_RANGE_UTC_MESSAGE = (
    f"Date hors de l'intervalle accepté : de l'an {DATE_YEARS[0]} à l'an {DATE_YEARS[1]} "
    "en temps universel (UTC)."
)
BAD_RANGE_MESSAGE = "La fin doit être après le début."
BAD_MEMORY_TYPE_MESSAGE = "Type de mémoire inconnu : « {value} »."


def search_filters_build(
    *,
    channel: str = "",
    memory_type: str = "",
    subjects: str | Sequence[str] = (),
    since: str | date | None = None,
    until: str | date | None = None,
) -> SearchFilters | None:
    """The filters of a search from what a caller was given; None when there are none.

    The one reading of filters shared by the API, the agent's tools, the MCP
    tools and the /memory form: subjects as a list or comma-separated, lower
    case; a date (or a "YYYY-MM-DD" string) is midnight in the configured time
    zone, ``since`` inclusive and ``until`` exclusive. Raises ValidationError
    (French messages) on an unknown type, a bad date or an empty range.
    """
    if isinstance(subjects, str):
        subjects = subjects.split(",")
    if memory_type and memory_type not in MemoryType.values:
        raise ValidationError({"memory_type": BAD_MEMORY_TYPE_MESSAGE.format(value=memory_type)})
    start, end = _moment(since, "since"), _moment(until, "until")
    if start is not None and end is not None and start >= end:
        raise ValidationError({"until": BAD_RANGE_MESSAGE})
    channel = (channel or "").strip()
    if channel:
        # A name no channel can have finds nothing: said, as the other paths say it
        # (QA: the agent's search with « bad channel! » answered an empty list).
        from memory.services.messages import BAD_CHANNEL, channel_validate

        try:
            channel_validate(channel)
        except ValidationError:
            raise ValidationError({"channel": BAD_CHANNEL}) from None
    filters = SearchFilters(
        channel=channel,
        memory_type=memory_type or "",
        subjects=tuple(dict.fromkeys(s.strip().lower() for s in subjects if s and s.strip())),
        since=start,
        until=end,
    )
    return filters if filters != SearchFilters() else None


def _moment(value: str | date | None, field: str) -> datetime | None:
    """An aware datetime from a date, a datetime or their ISO text (None when empty)."""
    from django.utils import timezone
    from django.utils.dateparse import parse_date, parse_datetime

    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = parse_datetime(text) or parse_date(text)
        except ValueError:
            parsed = None
        if parsed is None:
            raise ValidationError({field: BAD_DATE_MESSAGE.format(value=value)})
        value = parsed
    if not moment_in_range(value):
        raise ValidationError({field: DATE_RANGE_UTC_MESSAGE})
    if not isinstance(value, datetime):
        value = datetime.combine(value, time.min)
    if timezone.is_naive(value):
        value = timezone.make_aware(value)
    return value


def date_in_range(value: datetime) -> bool:
    """Whether ``value`` is a moment the memory accepts (``DATE_YEARS``), in its own offset
    (a stored moment, in UTC; the import's records, which keep the offset they were written
    in). A moment a writer gives is checked in UTC: ``moment_in_range``."""
    return DATE_YEARS[0] <= value.year <= DATE_YEARS[1]


def moment_in_utc(value: date) -> datetime | None:
    """``value`` in UTC, None past the calendar. A date is its midnight and a naive moment
    is in the current time zone, as DRF's DateTimeField reads them."""
    from django.utils import timezone

    if not isinstance(value, datetime):
        value = datetime.combine(value, time.min)
    if timezone.is_naive(value):
        value = timezone.make_aware(value)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        return None


def moment_in_range(value: date) -> bool:
    """Whether a moment a writer gives is within the memory's years in UTC, the time zone the
    memory stores (checked in its own offset, 1000-01-01T00:30+05:00 was the year 999): the
    one rule of the API's dates, the search filters and the admin's expiry."""
    moment = moment_in_utc(value)
    return moment is not None and date_in_range(moment)


# The first and last moments of DATE_YEARS in UTC, the time zone the memory stores.
DATE_EDGES = (
    datetime(DATE_YEARS[0], 1, 1, tzinfo=UTC),
    datetime(DATE_YEARS[1], 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
)


def date_clamp(value: datetime) -> datetime:
    """A stored moment (aware) as one date_in_range accepts in UTC: itself, or the nearest
    edge of DATE_YEARS. Stored past them: a year-9999 expiry the admin saved before it
    checked the years (it means "never"), or a moment a writer gave in range in its own
    offset (1000-01-01T00:00+05:00) that UTC puts a few hours out of it."""
    return min(max(value, DATE_EDGES[0]), DATE_EDGES[1])


def memory_search(
    *,
    query: str,
    mode: SearchMode = "semantic",
    limit: int = 10,
    filters: SearchFilters | None = None,
) -> list[SearchHit]:
    """The best ``limit`` hits for ``query``, best first.

    Raises StoreUnavailable (a French message for the user) when semantic
    search cannot run: no embedder, Qdrant down, dimension mismatch.
    """
    limit = max(1, min(int(limit), MAX_LIMIT))
    query = query.strip()
    if not query:
        return []
    if mode == "text":
        from memory.services.search_text import text_search

        return text_search(query, limit, filters)
    # Filters apply after ranking in the modes that rank by meaning: ask for more.
    wanted = limit * 4 if filters else limit
    if mode == "semantic":
        hits = semantic_hits(query, min(wanted, MAX_LIMIT * 4))
    elif mode == "hybrid":
        hits = _hybrid_search(query, min(wanted, MAX_LIMIT * 4))
    else:
        raise ValueError(f"unknown search mode {mode!r}")
    return _filtered(hits, filters)[:limit] if filters else hits[:limit]


def _filtered(hits: list[SearchHit], filters: SearchFilters) -> list[SearchHit]:
    """Hits of the semantic and hybrid modes that pass the filters (facts re-read from T1)."""
    from memory.stores.fts import fact_ids_passing

    fact_ids = [int(h.id) for h in hits if h.kind == "fact"]
    passing = fact_ids_passing(fact_ids, filters.fact_where())
    facts = set(facts_active().filter(pk__in=passing).values_list("pk", flat=True))
    kept = []
    for hit in hits:
        if hit.kind == "fact":
            if int(hit.id) in facts:
                kept.append(hit)
            continue
        if filters.memory_type or filters.subjects:
            continue  # only facts have a memory type and subjects
        if filters.channel and hit.channel != filters.channel:
            continue
        if hit.date is not None and (
            (filters.since is not None and hit.date < filters.since)
            or (filters.until is not None and hit.date >= filters.until)
        ):
            continue
        kept.append(hit)
    return kept


def _hybrid_search(query: str, limit: int) -> list[SearchHit]:
    """The auto-retrieval's own ranking (semantic + keywords + T1 + time, fused), as hits."""
    from memory.services.retrieval import memory_rank

    scores: dict[str, float] = {}
    try:
        _, ranked = memory_rank(
            message=query, channel="", mode="hybrid", limit=limit, scores=scores, gate=False
        )
    except (StoreUnavailable, DimensionMismatch) as exc:
        raise StoreUnavailable(SEMANTIC_UNAVAILABLE_MESSAGE.format(reason=exc)) from exc
    by_kind: dict[str, list[int]] = {"fact": [], "message": [], "summary": []}
    for item_id in ranked:
        kind, _, raw = item_id.partition(":")
        by_kind[kind].append(int(raw))
    facts = {f.pk: f for f in facts_active().filter(pk__in=by_kind["fact"])}
    summaries = {s.pk: s for s in Summary.objects.filter(pk__in=by_kind["summary"])}
    roots, replies = exchanges_read(by_kind["message"])
    hits: list[SearchHit] = []
    for item_id in ranked:
        kind, _, raw = item_id.partition(":")
        row_id, score = int(raw), round(scores.get(item_id, 0.0), 6)
        if kind == "fact" and row_id in facts:
            hits.append(fact_hit(facts[row_id], score=score, source="hybrid"))
        elif kind == "summary" and row_id in summaries:
            hits.append(summary_hit(summaries[row_id], score=score, source="hybrid"))
        elif kind == "message" and row_id in roots:
            hits.append(
                exchange_hit(roots[row_id], replies.get(row_id), score=score, source="hybrid")
            )
    # The observed rooms' messages, which that ranking leaves out (it ranks what the
    # pre-hook fuses), by meaning (the query's embedding is cached).
    meaning = semantic_hits(query, limit)
    rooms = [hit for hit in meaning if hit.source == ROOMS_SOURCE]
    return rooms_placed(hits, rooms, {(h.kind, h.id): h.score for h in meaning})
