"""The on-demand search's hits: one SearchHit shape for every mode, built from T1 rows.

Every mode (semantic, text, hybrid) shows what T1 holds now, never what an
index stored: the builders here take the rows read from T1, and the excerpt
is cut around the first word of the query it finds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memory.models import Fact, Message, Summary
from memory.stores.fts import fold

EXCERPT_CHARS = 200


@dataclass(frozen=True)
class SearchHit:
    id: str
    kind: str  # "message" | "exchange" | "fact" | "summary"
    score: float
    channel: str
    date: datetime | None
    excerpt: str
    type: str
    source: str  # where it was found: "conversations", "knowledge", "live", "messages_fts", "facts", "hybrid"
    key: str = ""  # facts only


def exchanges_read(root_ids: Iterable[int]) -> tuple[dict[int, Message], dict[int, Message]]:
    """The exchanges rooted at ``root_ids`` as T1 holds them: (roots by id, first reply by root id).

    An id T1 no longer has is simply absent: its hit is dropped, never shown from an index.
    """
    roots = {m.pk: m for m in Message.objects.filter(pk__in=list(root_ids))}
    replies: dict[int, Message] = {}
    for reply in Message.objects.filter(reply_to_id__in=list(roots)).order_by("created_at", "id"):
        replies.setdefault(reply.reply_to_id, reply)
    return roots, replies


def exchange_hit(root: Message, reply: Message | None, *, score: float, source: str) -> SearchHit:
    """An exchange as a hit: its user message and the reply to it."""
    text = f"{root.content} → {reply.content}" if reply else root.content
    return SearchHit(
        id=str(root.pk),
        kind="exchange",
        score=score,
        channel=root.channel,
        date=root.created_at,
        excerpt=excerpt(text),
        type="exchange",
        source=source,
    )


def fact_hit(fact: Fact, *, score: float, source: str, terms: list[str] | None = None) -> SearchHit:
    return SearchHit(
        id=str(fact.pk),
        kind="fact",
        score=round(score, 4),
        channel=fact.channel,
        date=fact.date,
        excerpt=excerpt(fact.value, terms),
        type=fact.memory_type,
        source=source,
        key=fact.key,
    )


def summary_hit(
    summary: Summary, *, score: float, source: str, terms: list[str] | None = None
) -> SearchHit:
    return SearchHit(
        id=str(summary.pk),
        kind="summary",
        score=score,
        channel=summary.channel,
        date=summary.date,
        excerpt=excerpt(summary.content, terms),
        type="summary",
        source=source,
    )


def excerpt(text: str, terms: list[str] | None = None, *, size: int = EXCERPT_CHARS) -> str:
    """At most ``size`` characters of ``text``, around the first term found when given."""
    text = " ".join(text.split())
    if len(text) <= size:
        return text
    start = 0
    if terms:
        position = _first_term_position(text, terms)
        if position is not None:
            start = max(0, min(position - size // 4, len(text) - size))
    prefix = "…" if start > 0 else ""
    end = start + size - len(prefix)
    suffix = "…" if end < len(text) else ""
    if suffix:
        end -= 1
    return prefix + text[start:end] + suffix


def _first_term_position(text: str, terms: list[str]) -> int | None:
    # fold() can change the length (ligatures, decomposed accents): fold each
    # character apart and keep where it came from.
    folded_chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        for folded in fold(char):
            folded_chars.append(folded)
            origin.append(index)
    folded_text = "".join(folded_chars)
    positions = [p for p in (folded_text.find(term) for term in terms) if p >= 0]
    return origin[min(positions)] if positions else None
