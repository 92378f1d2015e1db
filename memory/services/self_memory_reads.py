"""Reading the agent's self and goal items: the list the dashboard and the API show, one
item by id, and the tools' search (by meaning, else by shared words, else the most
important items).

The owner's reads never see these items (memory.services.self_memory says why): they
are read here explicitly, from ``Fact.all_objects`` or ``facts_active(kind=...)``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import QuerySet

from memory.exceptions import (
    DimensionMismatch,
    EmbeddingInvalid,
    MemoryServiceError,
    StoreUnavailable,
)
from memory.models import Fact, FactKind
from memory.services.search import QUERY_MAX_CHARS
from memory.services.self_memory_validate import (
    AGENT_KINDS,
    NEGATIONS,
    _folded_words,
    _no_nul,
    agent_item_validate,
)

# The agent's items' log, whichever module writes to it: one place to read them.
logger = logging.getLogger("memory.services.self_memory")

# As the agent's own search tools (agent.tool_kit.MAX_QUERY_CHARS).
QUERY_TOO_LONG_MESSAGE = "La recherche dépasse {limit} caractères : raccourcissez-la."
QUERY_EMPTY_MESSAGE = "La recherche est vide : dites ce qu'il faut chercher."
SEARCH_LIMIT = 5
NOT_FOUND_MESSAGE = "Aucun souvenir {label} avec l'id {id}."
KIND_LABELS = {FactKind.SELF: "sur moi-même", FactKind.GOAL: "d'objectif"}


def agent_items_active(*, kind: str) -> QuerySet[Fact]:
    from memory.selectors import facts_active

    return facts_active(kind=kind)


def agent_items_list(*, kind: str | None = None, include_forgotten: bool = False) -> QuerySet[Fact]:
    """The agent's items for the dashboard and the API, by kind and category."""
    items = Fact.all_objects.filter(forgetting__isnull=True, kind__in=AGENT_KINDS)
    if kind:
        items = items.filter(kind=kind)
    if not include_forgotten:
        items = items.filter(forgotten=False)
    return items.order_by("kind", "category", "-importance", "-updated_at")


def agent_item_get(*, kind: str | None, item_id: int) -> Fact:
    items = Fact.all_objects.filter(forgetting__isnull=True, kind__in=AGENT_KINDS)
    if kind:
        items = items.filter(kind=kind)
    item = items.filter(pk=item_id).first()
    if item is None:
        label = KIND_LABELS.get(kind, "de l'agent")
        raise MemoryServiceError(NOT_FOUND_MESSAGE.format(label=label, id=item_id))
    return item


@dataclass
class AgentItemHit:
    item: Fact
    score: float | None


def agent_item_search(
    *, kind: str, query: str, category: str | None = None, limit: int = SEARCH_LIMIT
) -> tuple[list[AgentItemHit], str]:
    """Items of ``kind`` closest to ``query``, best first, and how they were found.

    By meaning (Qdrant ``knowledge``, type = kind) above the tools' minimum
    score; when that finds nothing or the store is down, by shared words; and
    when a question is too vague for both ("qui je suis"), the most important
    items (a handful: the agent knows little about itself). ``how`` is
    "semantic", "words" or "important".
    """
    if category:
        agent_item_validate(kind=kind, category=category, content="-")
    active = agent_items_active(kind=kind)
    if category:
        active = active.filter(category=category)
    hits: list[AgentItemHit] = []
    try:
        hits = _semantic(kind=kind, query=query, active=active, limit=limit)
    except (StoreUnavailable, DimensionMismatch, EmbeddingInvalid) as exc:
        logger.warning("self search: semantic search unavailable (%s)", exc)
    if hits:
        return hits, "semantic"
    words = set(_folded_words(query)) - NEGATIONS
    scored = []
    for item in active:
        shared = len(words & set(_folded_words(item.value)))
        if shared:
            scored.append((shared, item.importance, item))
    if scored:
        scored.sort(key=lambda t: (-t[0], -t[1]))
        return [AgentItemHit(item, None) for _, _, item in scored[:limit]], "words"
    important = active.order_by("-importance", "-updated_at")[:limit]
    return [AgentItemHit(item, None) for item in important], "important"


def agent_item_recall(
    *, kind: str, query: str, category: str | None = None, limit: int = SEARCH_LIMIT
) -> tuple[list[AgentItemHit], str]:
    """The tools' search: agent_item_search, the items found counted as read."""
    from memory.models.rules import shows_nothing
    from memory.services.fact_access import facts_accessed

    _no_nul(query)
    if shows_nothing(query):  # QA: spaces answered items « par le sens »
        raise MemoryServiceError(QUERY_EMPTY_MESSAGE)
    if len(query) > QUERY_MAX_CHARS:
        raise MemoryServiceError(QUERY_TOO_LONG_MESSAGE.format(limit=QUERY_MAX_CHARS))
    hits, how = agent_item_search(kind=kind, query=query, category=category, limit=limit)
    facts_accessed(hit.item.pk for hit in hits)
    return hits, how


def _semantic(*, kind: str, query: str, active: QuerySet[Fact], limit: int) -> list[AgentItemHit]:
    from memory.selectors import memory_settings_get
    from memory.services.index_documents import fact_point_type
    from memory.stores.embedders import cosine_threshold, get_embedder, relevance_score
    from memory.stores.vectors import KNOWLEDGE, get_vector_store

    embedder = get_embedder()
    vector = embedder.embed_query(query)
    store = get_vector_store()
    if store.collection_dimension(KNOWLEDGE) is None:
        return []
    threshold = cosine_threshold(embedder, memory_settings_get().search_min_score)
    points = store.search(
        KNOWLEDGE,
        vector,
        limit=limit * 3,
        score_threshold=threshold,
        filters={"type": fact_point_type(kind)},
    )
    scores = {
        int(p.payload["row_id"]): relevance_score(embedder, p.score)
        for p in points
        if (p.payload or {}).get("row_id")
    }
    # T1 decides: a point of a row deleted or edited meanwhile shows the row as it is.
    items = active.filter(pk__in=scores)
    ranked = sorted(items, key=lambda item: -scores[item.pk])[:limit]
    return [AgentItemHit(item, round(scores[item.pk], 3)) for item in ranked]
