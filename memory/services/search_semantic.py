"""The semantic mode of the on-demand search: the query embedded, the Qdrant collections
(exchanges, knowledge, the observed rooms' messages) searched with the settings'
``search_min_score``, every hit checked against T1.

Qdrant is derived data: a fact forgotten or expired since it was indexed is never
shown, and a fact's current value is shown rather than the indexed one; an
exchange T1 no longer has is dropped.
"""

from __future__ import annotations

import logging

from memory.exceptions import DimensionMismatch, StoreUnavailable
from memory.models import Summary
from memory.selectors import facts_active, memory_settings_get
from memory.services.search_hits import (
    SearchHit,
    exchange_hit,
    exchanges_read,
    fact_hit,
    summary_hit,
)
from memory.stores.vectors import OWNER_KNOWLEDGE

logger = logging.getLogger(__name__)

# Where a hit of an observed room's message was found (its point is in `live`).
ROOMS_SOURCE = "live"
SEMANTIC_UNAVAILABLE_MESSAGE = (
    "La recherche sémantique est indisponible ({reason}). La recherche texte fonctionne toujours."
)


def semantic_hits(query: str, limit: int) -> list[SearchHit]:
    """The semantic mode's hits for ``query``, best first (memory_search's mode "semantic"):
    the exchanges, the facts and summaries, and the observed rooms' messages."""
    found = _searched(query, limit)
    hits = _exchange_hits(found["exchanges"])
    hits.extend(_knowledge_hits(found["knowledge"]))
    hits.extend(_exchange_hits(found["rooms"], source=ROOMS_SOURCE))
    hits.sort(key=lambda hit: hit.score, reverse=True)
    return hits[:limit]


def _searched(query: str, limit: int) -> dict[str, list]:
    """The collections' hits for ``query`` above the settings' ``search_min_score``, on
    the relevance scale (StoreUnavailable, in French, when the search cannot run)."""
    min_score = memory_settings_get().search_min_score
    found: dict[str, list] = {"exchanges": [], "knowledge": [], "rooms": []}
    try:
        from memory.services.summary_parts import KNOWLEDGE_OVERFETCH
        from memory.stores.embedders import cosine_threshold, get_embedder, relevance_score
        from memory.stores.vectors import (
            CONVERSATIONS,
            KNOWLEDGE,
            LIVE,
            VectorHit,
            get_vector_store,
        )

        embedder = get_embedder()
        vector = embedder.embed_query(query)
        store = get_vector_store()
        # search_min_score is on the embedders' common relevance scale; so are the scores shown.
        threshold = cosine_threshold(embedder, min_score)

        def rescored(collection, *, extra: int = 0, **filters):
            # Some hits may be rows forgotten or deleted since indexing (their points
            # go a moment later): ask for more, T1 decides what is shown.
            hits = store.search(
                collection, vector, limit=limit * 2 + extra, score_threshold=threshold, **filters
            )
            return [VectorHit(h.id, relevance_score(embedder, h.score), h.payload) for h in hits]

        found["exchanges"] = rescored(CONVERSATIONS)
        # A long summary's passages are points too, shown once (_knowledge_hits).
        found["knowledge"] = rescored(KNOWLEDGE, extra=KNOWLEDGE_OVERFETCH, filters=OWNER_KNOWLEDGE)
        found["rooms"] = rescored(LIVE)
    except StoreUnavailable as exc:
        raise StoreUnavailable(SEMANTIC_UNAVAILABLE_MESSAGE.format(reason=exc)) from exc
    except DimensionMismatch as exc:
        raise StoreUnavailable(SEMANTIC_UNAVAILABLE_MESSAGE.format(reason=exc)) from exc
    except ImportError as exc:
        logger.warning("semantic search modules missing: %s", exc)
        raise StoreUnavailable(
            SEMANTIC_UNAVAILABLE_MESSAGE.format(reason="index vectoriel non installé")
        ) from exc
    except Exception as exc:  # a store or embedder failing in a way it did not name
        logger.exception("semantic search failed")
        raise StoreUnavailable(
            SEMANTIC_UNAVAILABLE_MESSAGE.format(reason=type(exc).__name__)
        ) from exc
    return found


def _exchange_hits(hits: list, source: str = "conversations") -> list[SearchHit]:
    """Exchange hits read from T1, never from the payload alone.

    A point may outlive its exchange for a moment (a forget, an exclusion, a
    deletion not yet applied to Qdrant): what T1 no longer has, or hides, is
    never shown, and the text shown is T1's.
    """
    roots, replies = exchanges_read({_row_id(hit) for hit in hits} - {None})
    results = []
    for hit in hits:
        root = roots.get(_row_id(hit))
        if root is None:
            continue
        results.append(
            exchange_hit(
                root,
                replies.get(root.pk),
                score=round(float(hit.score), 4),
                source=source,
            )
        )
    return results


def _knowledge_hits(hits: list) -> list[SearchHit]:
    """Knowledge hits checked against T1: gone, forgotten or expired facts are dropped."""
    fact_ids = {_row_id(hit) for hit in hits if (hit.payload or {}).get("type") == "fact"}
    summary_ids = {_row_id(hit) for hit in hits if (hit.payload or {}).get("type") == "summary"}
    facts = {fact.pk: fact for fact in facts_active().filter(pk__in=fact_ids - {None})}
    summaries = {s.pk: s for s in Summary.objects.filter(pk__in=summary_ids - {None})}
    results: list[SearchHit] = []
    for hit in hits:
        payload = hit.payload or {}
        row_id = _row_id(hit)
        if payload.get("type") == "fact":
            fact = facts.get(row_id)
            if fact is not None and not fact.is_expired:
                results.append(fact_hit(fact, score=float(hit.score), source="knowledge"))
        elif payload.get("type") == "summary" and row_id in summaries:
            # Once, at its best point (the hits come best first): a long summary's
            # passages are points of their own (summary_parts).
            summary = summaries.pop(row_id)
            results.append(
                summary_hit(summary, score=round(float(hit.score), 4), source="knowledge")
            )
    return results


def _row_id(hit) -> int | None:
    payload = hit.payload or {}
    value = payload.get("row_id") or payload.get("message_id")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def rooms_placed(
    hits: list[SearchHit], rooms: list[SearchHit], closeness: dict[tuple[str, str], float]
) -> list[SearchHit]:
    """``hits`` (the fused ranking) with each of ``rooms`` (best first) put before the first
    hit after the previous one that the semantic search found less close to the query
    (``closeness``, by kind and id); a hit found by its words alone keeps its place."""
    placed = list(hits)
    at = 0
    for room in rooms:
        at = next(
            (
                i
                for i in range(at, len(placed))
                if placed[i].source != ROOMS_SOURCE
                and closeness.get((placed[i].kind, placed[i].id), room.score) < room.score
            ),
            len(placed),
        )
        placed.insert(at, room)
        at += 1
    return placed
