"""The memory_retrievals row of an auto-retrieval."""

from __future__ import annotations

import logging

from django.db import DatabaseError

from memory.models import MemoryRetrieval
from memory.services.formatting import clean_text
from memory.services.retrieval.result import RetrievalResult

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 200


def retrieval_log(result: RetrievalResult) -> int | None:
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
