"""Memories re-read from T1 (the source of truth), and what the LLM already sees of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from memory.models import Fact, Message, MessageRole, MessageSource, Summary
from memory.services.retrieval.result import Candidate
from memory.stores.compiled import CompiledRead, ids_in


def _facts(now: datetime):
    from memory.selectors import facts_active

    return (
        facts_active(now=now)
        .filter(pk__in=ids_in())
        .order_by()
        .values_list("id", "key", "value", "channel", Fact.DATE_FIELD, "memory_type")
    )


def _summaries(_now: datetime):
    return (
        Summary.objects.filter(pk__in=ids_in())
        .order_by()
        .annotate(date=Summary.date_expression())
        .values_list("id", "content", "channel", "date")
    )


def _roots(_now: datetime):
    return Message.objects.filter(pk__in=ids_in()).order_by().values_list("id", "reply_to_id")


def _exchanges(_now: datetime):
    """The user messages of ``ids`` and the assistant replies to them, oldest first."""
    return (
        Message.objects.filter(
            Q(pk__in=ids_in()) | Q(reply_to_id__in=ids_in(), role=MessageRole.ASSISTANT)
        )
        .order_by("created_at", "id")
        .values_list("id", "reply_to_id", "role", "source", "channel", "content", "created_at")
    )


# Compiled once: hydrate runs on every message, twice (see memory.stores.compiled).
_FACTS = CompiledRead(_facts)
_SUMMARIES = CompiledRead(_summaries)
_ROOTS = CompiledRead(_roots)
_EXCHANGES = CompiledRead(_exchanges)


def hydrate(ids: list[str], now: datetime) -> dict[str, Candidate]:
    """The candidates that still exist in T1, keyed by their (exchange-normalised) id.

    Message ids are mapped to their exchange (the user message they answer);
    the returned dict has an entry for each input id that survives.
    """
    by_kind: dict[str, list[int]] = {"fact": [], "message": [], "summary": []}
    for item_id in ids:
        kind, _, raw = item_id.partition(":")
        by_kind[kind].append(int(raw))
    found: dict[str, Candidate] = {}
    # No query for a kind without ids.
    if by_kind["fact"]:
        for pk, key, value, channel, date, memory_type in _FACTS.rows(ids=by_kind["fact"], now=now):
            found[f"fact:{pk}"] = Candidate(
                id=f"fact:{pk}",
                kind="fact",
                text=fact_line(key, value),
                channel=channel,
                timestamp=date,
                memory_type=memory_type,
                row_ids=(pk,),
            )
    if by_kind["summary"]:
        for pk, content, channel, date in _SUMMARIES.rows(ids=by_kind["summary"]):
            found[f"summary:{pk}"] = Candidate(
                id=f"summary:{pk}",
                kind="summary",
                text=content,
                channel=channel,
                timestamp=date,
                row_ids=(pk,),
            )
    if by_kind["message"]:
        root_of = {mid: (reply_to or mid) for mid, reply_to in _ROOTS.rows(ids=by_kind["message"])}
        root_ids = set(root_of.values())
        roots: dict[int, tuple] = {}
        replies: dict[int, tuple] = {}
        for row in _EXCHANGES.rows(ids=root_ids):
            if row[0] in root_ids:
                roots[row[0]] = row
            else:
                replies.setdefault(row[1], row)
        for mid, root_id in root_of.items():
            root = roots.get(root_id)
            if root is None:
                continue
            _, _, role, source, channel, content, created_at = root
            if source == MessageSource.SYSTEM or role not in (
                MessageRole.USER,
                MessageRole.ASSISTANT,
            ):
                continue
            reply = replies.get(root_id)
            text = f"Utilisateur : {content}"
            if reply is not None:
                text += f" — Assistant : {reply[5]}"
            found[f"message:{mid}"] = Candidate(
                id=f"message:{root_id}",
                kind="exchange",
                text=text,
                channel=channel,
                timestamp=created_at,
                row_ids=(root_id, reply[0]) if reply else (root_id,),
            )
    return found


@dataclass(frozen=True)
class Seen:
    """What the LLM already has from its conversation: the history and the channel's summary."""

    message_ids: frozenset[int] = frozenset()
    summary_id: int | None = None
    # The content words of each history message (relevance.content_words).
    said: tuple[frozenset[str], ...] = ()

    def covers(self, candidate: Candidate) -> bool:
        if candidate.kind == "exchange":
            # Only an exchange received whole: a half is still worth injecting.
            return set(candidate.row_ids) <= self.message_ids
        if candidate.kind == "fact":
            # A fact whose value a history message already says word for word (drawn
            # from it, say); once its value changes it says something new.
            words = _value_words(candidate.text)
            return bool(words) and any(words <= message for message in self.said)
        return candidate.kind == "summary" and candidate.row_ids == (self.summary_id,)

    def unseen(self, ranked: list) -> list[str]:
        """The ranked ids that are not an exchange of the channel's history."""
        return [
            item
            for item, _ in ranked
            if not (item.startswith("message:") and int(item[8:]) in self.message_ids)
        ]


def _value_words(line: str) -> frozenset[str]:
    from memory.services.relevance import content_words

    return frozenset(content_words(line.split(FACT_LINE_SEPARATOR, 1)[-1]))


FACT_LINE_SEPARATOR = " : "


def fact_line(key: str, value: str) -> str:
    """How a fact reads in the block: its key as words, then its value."""
    return f"{key.replace('_', ' ')}{FACT_LINE_SEPARATOR}{value}"
