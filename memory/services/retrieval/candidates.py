"""Memories re-read from T1 (the source of truth), and what the LLM already sees of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from memory.models import Fact, Message, MessageRole, MessageSource, Summary
from memory.services.retrieval.result import Candidate


def hydrate(ids: list[str], now: datetime) -> dict[str, Candidate]:
    """The candidates that still exist in T1, keyed by their (exchange-normalised) id.

    Message ids are mapped to their exchange (the user message they answer);
    the returned dict has an entry for each input id that survives.
    """
    from memory.selectors import facts_active

    by_kind: dict[str, list[int]] = {"fact": [], "message": [], "summary": []}
    for item_id in ids:
        kind, _, raw = item_id.partition(":")
        by_kind[kind].append(int(raw))
    found: dict[str, Candidate] = {}
    # values() and no ordering, and no query for a kind without ids: this runs on
    # every message, and the ORM's per-query cost (compiling, instantiating
    # models) is most of it.
    if by_kind["fact"]:
        facts = facts_active().filter(pk__in=by_kind["fact"]).order_by()
        values = ("id", "key", "value", "channel", Fact.DATE_FIELD, "memory_type")
        for row in facts.values(*values):
            found[f"fact:{row['id']}"] = Candidate(
                id=f"fact:{row['id']}",
                kind="fact",
                text=fact_line(row["key"], row["value"]),
                channel=row["channel"],
                timestamp=row[Fact.DATE_FIELD],
                memory_type=row["memory_type"],
                row_ids=(row["id"],),
            )
    if by_kind["summary"]:
        summaries = Summary.objects.filter(pk__in=by_kind["summary"]).order_by()
        summaries = summaries.annotate(date=Summary.date_expression())
        for row in summaries.values("id", "content", "channel", "date"):
            found[f"summary:{row['id']}"] = Candidate(
                id=f"summary:{row['id']}",
                kind="summary",
                text=row["content"],
                channel=row["channel"],
                timestamp=row["date"],
                row_ids=(row["id"],),
            )
    if by_kind["message"]:
        rows = Message.objects.filter(pk__in=by_kind["message"]).order_by()
        root_of = {
            mid: (reply_to or mid) for mid, reply_to in rows.values_list("id", "reply_to_id")
        }
        root_ids = set(root_of.values())
        exchange_rows = (
            Message.objects.filter(
                Q(pk__in=root_ids) | Q(reply_to_id__in=root_ids, role=MessageRole.ASSISTANT)
            )
            .order_by("created_at", "id")
            .values("id", "reply_to_id", "role", "source", "channel", "content", "created_at")
        )
        roots: dict[int, dict] = {}
        replies: dict[int, dict] = {}
        for row in exchange_rows:
            if row["id"] in root_ids:
                roots[row["id"]] = row
            else:
                replies.setdefault(row["reply_to_id"], row)
        for mid, root_id in root_of.items():
            root = roots.get(root_id)
            if (
                root is None
                or root["source"] == MessageSource.SYSTEM
                or root["role"] not in (MessageRole.USER, MessageRole.ASSISTANT)
            ):
                continue
            reply = replies.get(root_id)
            text = f"Utilisateur : {root['content']}"
            if reply is not None:
                text += f" — Assistant : {reply['content']}"
            found[f"message:{mid}"] = Candidate(
                id=f"message:{root_id}",
                kind="exchange",
                text=text,
                channel=root["channel"],
                timestamp=root["created_at"],
                row_ids=(root_id, reply["id"]) if reply else (root_id,),
            )
    return found


@dataclass(frozen=True)
class Seen:
    """What the LLM already has from its conversation: the history and the channel's summary."""

    message_ids: frozenset[int] = frozenset()
    summary_id: int | None = None

    def covers(self, candidate: Candidate) -> bool:
        if candidate.kind == "exchange":
            # Only an exchange received whole: a half is still worth injecting.
            return set(candidate.row_ids) <= self.message_ids
        return candidate.kind == "summary" and candidate.row_ids == (self.summary_id,)


def seen_get(channel: str, history: list[Message]) -> Seen:
    from memory.selectors import channel_summary_latest

    summary = channel_summary_latest(channel=channel)
    return Seen(
        message_ids=frozenset(m.pk for m in history),
        summary_id=summary.pk if summary is not None else None,
    )


def fact_line(key: str, value: str) -> str:
    """How a fact reads in the block: its key as words, then its value."""
    return f"{key.replace('_', ' ')} : {value}"
