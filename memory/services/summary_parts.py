"""A long summary's passages, each a point of its own beside the whole summary's point.

A monthly summary tells of a dozen topics: its one embedding, an average of them all,
stands close to none of them, and a question about one topic seldom reached it (the
held-out sets: questions answered by a summary found it at recall@10 0.64–0.80). Each
passage (whole sentences, up to PART_CHARS) is embedded as a point keyed to the summary,
so a question about one topic finds the summary by that passage; the whole summary's
point stays (a question about the month). A search hit on a passage is a hit on its
summary (retrieval.semantic.hit_id), counted once at its best passage.
"""

from __future__ import annotations

import re

# A passage's length: a few sentences, about one topic of a summary.
PART_CHARS = 300
# Passages a summary may have (their point ids are known without reading the store, so
# a forget or an erasure deletes every one of them); past it, the whole point covers.
PARTS_MAX = 16

# What a search of knowledge asks beyond its limit: one long summary's points (its own and
# its passages) can then never push every other memory out of the hits (review: a summary
# about one topic took all 5 points of the pre-hook's semantic source).
KNOWLEDGE_OVERFETCH = PARTS_MAX + 1

_SENTENCE_END = re.compile(r"(?<=[.!?;:…])\s+|\n+")


def summary_parts(text: str) -> list[str]:
    """The passages of ``text``: whole sentences gathered up to PART_CHARS (a longer
    sentence is a passage alone), at most PARTS_MAX; none when it makes one passage."""
    parts: list[str] = []
    current = ""
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        if current and len(current) + 1 + len(sentence) > PART_CHARS:
            parts.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        parts.append(current)
    return parts[:PARTS_MAX] if len(parts) > 1 else []


def summary_part_ids(row_id: int) -> list[str]:
    """Every point id a summary's passages may have (PARTS_MAX of them)."""
    from memory.services.index_documents import KIND_SUMMARY
    from memory.stores.vectors import part_point_id

    return [part_point_id(KIND_SUMMARY, row_id, part) for part in range(PARTS_MAX)]
