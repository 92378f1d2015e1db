"""The text mode of the owner's search (memory.services.search): messages, facts and
summaries by their words, with nothing but SQLite (FTS5's bm25)."""

from __future__ import annotations

from django.utils import timezone

from memory.models import Summary
from memory.selectors import facts_active
from memory.services.fusion import interleaved
from memory.services.search import SearchFilters
from memory.services.search_hits import SearchHit, excerpt, fact_hit, summary_hit
from memory.stores.fts import (
    fts_rank_summaries,
    fts_search,
    fts_search_facts,
    literal_words,
    query_terms,
)


def text_search(query: str, limit: int, filters: SearchFilters | None = None) -> list[SearchHit]:
    """Messages, facts and summaries by their words: those with every word first, then any.

    A natural question ("qu'est-ce que le kiné a dit pour mon épaule ?") would
    match nothing as an AND over all its words, stop words included; so stop
    words are dropped (unless nothing else is left) and, after the rows holding
    every remaining word, come the rows holding some of them, each tier ranked
    by FTS5's bm25 (messages_fts, facts_fts, summaries_fts). The three kinds
    interleave by rank: their bm25 scores come from three indexes and do not
    compare. A one-letter word with symbols ("C++", "C#") must be there as
    written: to FTS5 it is the letter alone, the "c" of every "c'est".
    """
    from memory.services.keywords import keyword_terms

    filters = filters or SearchFilters()
    terms = keyword_terms(query) or query_terms(query)
    if not terms:
        return []
    literals = literal_words(query)
    hits: list[SearchHit] = []
    seen: dict[str, list[int]] = {"message": [], "fact": [], "summary": []}
    for any_term in (False, True) if len(terms) > 1 else (False,):
        tiers = (
            _message_text_hits(terms, limit, filters, any_term, seen["message"], literals),
            _fact_text_hits(terms, limit, filters, any_term, set(seen["fact"]), literals),
            _summary_text_hits(terms, limit, filters, any_term, set(seen["summary"]), literals),
        )
        for tier in tiers:
            for hit in tier:
                seen[hit.kind].append(int(hit.id))
        hits.extend(interleaved(tiers))
        if len(hits) >= limit:
            break
    return hits[:limit]


def _message_text_hits(
    terms: list[str],
    limit: int,
    filters: SearchFilters,
    any_term: bool,
    exclude: list[int],
    literals: list[str],
) -> list[SearchHit]:
    if filters.memory_type or filters.subjects:
        return []  # messages have neither a memory type nor subjects
    return [
        SearchHit(
            id=str(hit.message_id),
            kind="message",
            score=round(hit.score, 4),
            channel=hit.channel,
            date=hit.created_at,
            excerpt=excerpt(hit.content, terms),
            type=hit.role,
            source="messages_fts",
        )
        for hit in fts_search(
            "",
            terms=terms,
            limit=limit,
            any_term=any_term,
            channel=filters.channel or None,
            since=filters.since,
            until=filters.until,
            exclude_ids=exclude,
            literals=literals,
        )
    ]


def _fact_text_hits(
    terms: list[str],
    limit: int,
    filters: SearchFilters,
    any_term: bool,
    exclude: set[int],
    literals: list[str],
) -> list[SearchHit]:
    """Active facts matching the terms in facts_fts (key words + value), best bm25 first,
    within the filters (applied in the ranking query: after it, a fact passing them but
    ranked below others was never returned)."""
    where = filters.fact_where(now=timezone.now())
    ranked = fts_search_facts(
        terms, limit=limit + len(exclude), any_term=any_term, literals=literals, where=where
    )
    scores = {hit.fact_id: hit.score for hit in ranked if hit.fact_id not in exclude}
    # The filters were the ranking query's: only what was forgotten since is left to drop.
    facts = facts_active().filter(pk__in=list(scores))
    kept = sorted(facts, key=lambda fact: -scores[fact.pk])[:limit]
    return [fact_hit(fact, score=scores[fact.pk], source="facts", terms=terms) for fact in kept]


def _summary_text_hits(
    terms: list[str],
    limit: int,
    filters: SearchFilters,
    any_term: bool,
    exclude: set[int],
    literals: list[str],
) -> list[SearchHit]:
    """The summaries still in the memory matching the terms in summaries_fts, best bm25
    first, within the channel and the dates asked (a summary's date: the end of its period)."""
    if filters.memory_type or filters.subjects:
        return []  # summaries have neither a memory type nor subjects
    ranked = fts_rank_summaries(
        terms,
        limit=limit + len(exclude),
        any_term=any_term,
        literals=literals,
        channel=filters.channel or None,
        since=filters.since,
        until=filters.until,
    )
    scores = {hit.summary_id: hit.score for hit in ranked if hit.summary_id not in exclude}
    summaries = Summary.objects.filter(pk__in=list(scores))  # a summary forgotten since: gone
    kept = sorted(summaries, key=lambda summary: -scores[summary.pk])[:limit]
    return [
        summary_hit(
            summary, score=round(scores[summary.pk], 4), source="summaries_fts", terms=terms
        )
        for summary in kept
    ]
