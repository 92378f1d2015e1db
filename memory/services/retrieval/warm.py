"""The pre-hook's warm-up at `serve`'s start: the first message retrieved as fast as the next."""

from __future__ import annotations

import logging
import time

from memory.services.retrieval.result import elapsed_ms

logger = logging.getLogger(__name__)

# The message retrieval_warm previews: words to search, accents to fold, a period.
WARM_MESSAGE = "Qu'avait-on prévu la semaine dernière pour le vélo ?"
WARM_CHANNEL = "warm-up"


def retrieval_warm() -> dict[str, float]:
    """Load the embedder, open the stores, embed the gate's reference sentences, and
    preview one whole retrieval.

    Called when `serve` starts, so the first message is retrieved as fast as
    the next (a cold embedder would lose the semantic source to its timeout).
    SQLite's planner statistics are refreshed too (the T1 lookups pick their
    index from them). The preview (nothing logged, nothing written) pays every
    other first time: the observed rooms' collection opened, the reads compiled,
    the facts read, the folding table of accented text built (the first message
    took 215 ms against 40 for the next with the stores alone warmed). The
    keyword process is started when the bundled engine embeds a query on every
    core (memory.services.keywords_process). Never raises: a store that is
    down is warmed by the first real request.
    """
    from memory.services.keywords_process import keywords_process_start
    from memory.stores.sqlite import planner_statistics_refresh

    timings: dict[str, float] = {}
    start = time.perf_counter()
    planner_statistics_refresh()
    timings["sqlite"] = elapsed_ms(start)
    start = time.perf_counter()
    try:
        from memory.services.relevance import query_background
        from memory.stores.embedders import get_embedder
        from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store

        embedder = get_embedder()
        vector = embedder.embed_query("bonjour")
        timings["embedder"] = elapsed_ms(start)
        query_background(embedder, vector)
        store = get_vector_store()
        for collection in (CONVERSATIONS, KNOWLEDGE):
            if store.collection_dimension(collection) is not None:
                store.search(collection, vector, limit=1)
        timings["stores"] = elapsed_ms(start)
    except Exception as exc:  # warming is an optimisation, never a failure
        logger.warning("retrieval warm-up incomplete: %s", exc)
    from memory.services.retrieval.pipeline import embeds_on_every_core

    start = time.perf_counter()
    # Only a query embedded on every core leaves the keywords to it (not with Voyage,
    # nor on one core): no process kept for nothing.
    if embeds_on_every_core():
        keywords_process_start()
    timings["keywords_process"] = elapsed_ms(start)
    start = time.perf_counter()
    try:
        from zoneinfo import ZoneInfo

        from django.conf import settings
        from django.utils import timezone

        from memory.services.retrieval.live import live_hydrate
        from memory.services.retrieval.pipeline import auto_retrieve_preview

        auto_retrieve_preview(message=WARM_MESSAGE, channel=WARM_CHANNEL)
        # The observed rooms' read runs on a hit only: compiled here on an id no row has.
        live_hydrate([(0, 0.0)], now=timezone.now(), tz=ZoneInfo(settings.TIME_ZONE))
    except Exception as exc:
        logger.warning("retrieval warm-up incomplete: %s", exc)
    timings["pipeline"] = elapsed_ms(start)
    return timings
