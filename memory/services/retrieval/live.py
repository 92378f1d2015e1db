"""The `live` source of auto-retrieval: extracts of the observed rooms.

It shares the query embedding of the semantic source (handed over through a
Future as soon as it is computed), searches the `live` collection in its own
worker thread within its own time limit, and keeps only the hits above the
relevance gate: a hit must stand clear of the query's background closeness
(the gate margin of the embedder) or share a content word with the message
(its author's name included). An extract in the other language than the message gets
the semantic source's cross-language correction (memory.services.language): the
embedder's bonus back against `min_score`, its margin bonus against the gate.
Small talk never gets here (the message is stopped before any source runs,
and a room's "ok" or "lol" has no live point at all: see index_documents).
The hits are then checked against T1 in the caller's thread: a message
forgotten or digested since its point was written is never injected.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from datetime import datetime

from memory.services.retrieval.result import elapsed_ms
from memory.stores.compiled import CompiledRead, ids_in

SOURCE_LIVE = "live"
# Hits read beyond the limit, for those of the room being answered and the gate.
LIVE_EXTRA = 10


def live_search(
    vector_ready: Future,
    *,
    query_words: set[str],
    exclude_room: str,
    query_language: str = "",
    limit: int,
    min_score: float,
    wait_s: float,
) -> dict:
    """Runs in a worker thread: no database access here. The gated hits, best first.
    ``query_language``: language.text_language of the message ("" unknown)."""
    from memory.services.language import other_language, text_language
    from memory.services.relevance import content_words, query_background
    from memory.stores.embedders import cosine_threshold, relevance_score
    from memory.stores.vectors import LIVE, get_vector_store

    vector, embedder = vector_ready.result(timeout=wait_s)
    start = time.perf_counter()
    threshold = cosine_threshold(embedder, min_score)
    bonus = embedder.cross_language_bonus if query_language else 0.0
    hits = get_vector_store().search(
        LIVE, vector, limit=limit + LIVE_EXTRA, score_threshold=threshold - bonus
    )
    kept: list[tuple[int, float]] = []
    if not hits:  # no room observed, or nothing near: no background to compute
        return {"hits": kept, "timings": {SOURCE_LIVE: elapsed_ms(start)}}
    background = query_background(embedder, vector)
    for hit in hits:
        payload = hit.payload or {}
        if payload.get("room") == exclude_room or not payload.get("message_id"):
            continue
        # An extract indexed before its language was recorded is read from its content.
        language = (
            payload["lang"] if "lang" in payload else text_language(payload.get("content", ""))
        )
        across = other_language(query_language, language)
        if hit.score < threshold and not across:
            continue
        # Clear of the background, or sharing a word with the message. The author is part
        # of the line ("david · lobby · …"): a name the message gives counts.
        evidence = hit.score + (embedder.cross_language_margin_bonus if across else 0.0)
        if evidence - background < embedder.gate_margin and not query_words.intersection(
            content_words(f"{payload.get('author', '')} {payload.get('content', '')}")
        ):
            continue
        kept.append((int(payload["message_id"]), relevance_score(embedder, hit.score)))
        if len(kept) >= limit:
            break
    return {"hits": kept, "timings": {SOURCE_LIVE: elapsed_ms(start)}}


def _live_rows(_now: datetime):
    """The observed-room messages of ``ids`` still undigested (and not forgotten: the manager)."""
    from memory.models import Message

    return (
        Message.objects.filter(pk__in=ids_in(), observed=True, digested_at__isnull=True)
        .order_by()
        .values_list("id", "author", "channel", "content", "created_at")
    )


_LIVE_ROWS = CompiledRead(_live_rows)


def live_hydrate(hits: list[tuple[int, float]], *, now: datetime, tz) -> list[dict]:
    """The hits as block items, read from T1: forgotten or digested messages are dropped."""
    from memory.services.formatting import clean_text, live_label, relative_time_fr

    if not hits:
        return []
    rows = {row[0]: row for row in _LIVE_ROWS.rows(ids=[mid for mid, _ in hits])}
    items = []
    for rank, (mid, score) in enumerate(hits, start=1):
        if mid not in rows:
            continue
        _, author, room, content, created_at = rows[mid]
        items.append(
            {
                "id": f"message:{mid}",
                "kind": "live",
                "text": clean_text(content),
                "author": author,
                "room": room,
                "channel": room,
                "timestamp": created_at.isoformat(),
                "label": live_label(author, room, created_at, tz),
                "relative_time": relative_time_fr(created_at, now=now, tz=tz),
                "sources": {SOURCE_LIVE: {"rank": rank, "score": round(score, 4)}},
                "rrf": 0.0,
                "score": round(score, 4),
            }
        )
    return items
