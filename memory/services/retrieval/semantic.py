"""The semantic source of auto-retrieval: the query embedded, then the conversations and
the knowledge searched in Qdrant (memory.services.retrieval.pipeline runs the two parts
in a worker thread, or the searches in the caller's thread once the vector exists). No
database access here: every hit is hydrated from T1 afterwards."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future

from memory.services.language import other_language, text_language
from memory.services.retrieval.result import elapsed_ms


def semantic_search(
    text: str,
    *,
    limit: int,
    min_score: float | None,
    started: Callable[[], None] | None = None,
    embedded: Future | None = None,
    on_vector: Callable[[], None] | None = None,
    embed_timeout_s: float | None = None,
    query_language: str | None = None,
) -> dict:
    """The query embedded (query_embed), then the knowledge and conversations searched
    (semantic_found). Runs in a worker thread: no database access here.
    ``query_language``: the message's, when the caller has read it (text_language)."""
    timings: dict[str, float] = {}
    # Before the vector: nothing more after it.
    language = text_language(text) if query_language is None else query_language
    vector, embedder = query_embed(
        text,
        started=started,
        embedded=embedded,
        on_vector=on_vector,
        embed_timeout_s=embed_timeout_s,
        timings=timings,
    )
    return semantic_found(
        vector,
        embedder,
        limit=limit,
        min_score=min_score,
        timings=timings,
        query_language=language,
    )


def query_embed(
    text: str,
    *,
    started: Callable[[], None] | None = None,
    embedded: Future | None = None,
    on_vector: Callable[[], None] | None = None,
    embed_timeout_s: float | None = None,
    timings: dict[str, float] | None = None,
) -> tuple[list[float], object]:
    """(the query vector, the embedder); its time in ``timings["embed"]``.

    ``started`` is called as the embedding begins (see auto_retrieve);
    ``embedded`` receives (query vector, embedder) as soon as they exist;
    ``on_vector`` is called just before, while no thread waiting on ``embedded``
    is awake to take the GIL from it (keywords_process). ``embed_timeout_s``: the
    source's own limit; a remote embedder (Voyage's ``embed_query_once``) then makes
    one attempt within it instead of its indexing policy (long timeout, retries,
    Retry-After waits), which held this pool's threads long after the caller had
    given up. The bundled engine has no such method: its path is unchanged.
    """
    from memory.stores.embedders import get_embedder

    start = time.perf_counter()
    try:
        embedder = get_embedder()
        if started is not None:
            started()
        embed_once = getattr(embedder, "embed_query_once", None)
        if embed_once is None or embed_timeout_s is None:
            vector = embedder.embed_query(text)
        else:
            vector = embed_once(text, timeout_s=embed_timeout_s)
    except BaseException as exc:
        if embedded is not None:
            embedded.set_exception(exc)
        raise
    if timings is not None:  # before ``embedded``: whoever waits on it may read them
        timings["embed"] = elapsed_ms(start)
    if on_vector is not None:
        on_vector()
    if embedded is not None:
        # The live source searches with the same query vector (retrieval.live).
        embedded.set_result((vector, embedder))
    return vector, embedder


def semantic_found(
    vector: list[float],
    embedder,
    *,
    limit: int,
    min_score: float | None,
    timings: dict[str, float] | None = None,
    query_language: str = "",
) -> dict:
    """The two collections searched with the query vector: the hits, best first, each on
    the common relevance scale (embedders.relevance_score, so ``min_score`` means the same
    with the local model and with Voyage), and the relevance gate's margin. No database
    access here.

    ``query_language`` (language.text_language of the message, "" unknown): a hit known
    to be in the other language is held to ``min_score`` less the embedder's
    ``cross_language_bonus``, and stands its ``cross_language_margin_bonus`` higher for
    the gate; its rank and score are its own (memory.services.language)."""
    from memory.services.summary_parts import KNOWLEDGE_OVERFETCH
    from memory.stores.embedders import cosine_threshold, relevance_score
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, OWNER_KNOWLEDGE, get_vector_store

    timings = {} if timings is None else timings
    start = time.perf_counter()
    store = get_vector_store()
    bonus = embedder.cross_language_bonus if query_language else 0.0
    threshold = None if min_score is None else cosine_threshold(embedder, min_score)
    hits = []
    for collection in (CONVERSATIONS, KNOWLEDGE):
        # Only what semantic_ids reads. No vectors: the near-duplicate checks read the
        # few they compare (selection); the engine building every hit's 384 floats held
        # the GIL about 1 ms after each query embedding (10,000 memories, interleaved:
        # CPU per pre-hook 15.5 -> 14.2 ms, the same memories injected on 300/300).
        found = store.search(
            collection,
            vector,
            # Knowledge: a long summary's passages are points too; the best point of each
            # of the first ``limit`` memories is kept (distinct_hits).
            limit=limit + KNOWLEDGE_OVERFETCH if collection == KNOWLEDGE else limit,
            score_threshold=None if threshold is None else threshold - bonus,
            payload_fields=HIT_PAYLOAD_FIELDS,
            filters=OWNER_KNOWLEDGE if collection == KNOWLEDGE else None,
        )
        if collection == KNOWLEDGE:
            found = distinct_hits(collection, found, limit)
        hits.extend(
            (collection, hit, relevance_score(embedder, hit.score))
            for hit in found
            if threshold is None
            or hit.score >= threshold
            or other_language(query_language, hit.payload.get("lang"))
        )
    hits.sort(key=lambda triple: -triple[1].score)
    timings["qdrant"] = elapsed_ms(start)
    # The relevance gate's evidence: how far the best hit stands above the query's
    # own background (-1 when nothing passed the threshold).
    from memory.services.relevance import query_background

    margin_bonus = embedder.cross_language_margin_bonus
    best = max(
        (
            hit.score
            + (margin_bonus if other_language(query_language, hit.payload.get("lang")) else 0.0)
            for _, hit, _ in hits
        ),
        default=None,
    )
    margin = -1.0 if best is None else best - query_background(embedder, vector)
    return {
        "vector": vector,
        "hits": hits,
        "timings": timings,
        "embedder": embedder,
        "margin": margin,
    }


# The payload fields a semantic hit is read by (hit_id).
HIT_PAYLOAD_FIELDS = ["row_id", "message_id", "type", "lang"]


def hit_id(collection: str, hit) -> str | None:
    """The memory id of a Qdrant hit ("message:34", "fact:12", "summary:5"), None if unkeyed."""
    from memory.stores.vectors import CONVERSATIONS

    payload = hit.payload or {}
    row_id = payload.get("row_id") or payload.get("message_id")
    if not row_id:
        return None
    if collection == CONVERSATIONS:
        return f"message:{int(row_id)}"
    if payload.get("type") == "summary":
        return f"summary:{int(row_id)}"
    return f"fact:{int(row_id)}"


def distinct_hits(collection: str, hits: list, limit: int) -> list:
    """The best point (``hits`` come best first) of each of the first ``limit`` memories:
    a long summary's passages are points of their own (summary_parts), which would
    otherwise take the places of other memories (review)."""
    kept, seen = [], set()
    for hit in hits:
        item_id = hit_id(collection, hit)
        if item_id in seen:
            continue
        seen.add(item_id)
        kept.append(hit)
        if len(kept) == limit:
            break
    return kept


def semantic_ids(hits) -> list[tuple[str, float]]:
    """The memories the hits (best first) are points of, each once at its best point: a long
    summary's passages are points of their own (summary_parts)."""
    ranked = []
    seen: set[str] = set()
    for collection, hit, score in hits:
        item_id = hit_id(collection, hit)
        if item_id is not None and item_id not in seen:
            seen.add(item_id)
            ranked.append((item_id, score))
    return ranked
