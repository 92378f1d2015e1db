"""What a T1 row becomes in Qdrant: a Document to write, or "no point" (removal).

Pure reads of T1, no writes: the indexing state machine (memory.services.indexing)
decides when to act on them, ``memory_doctor`` compares them with the points.
Every payload carries ``version``: the row version the point was embedded from, and
``lang``: the language its text is written in (language.text_language, "" unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import Fact, Message, MessageRole, Summary
from memory.services.language import text_language

KIND_MESSAGE = "message"
KIND_FACT = "fact"
KIND_SUMMARY = "summary"
KINDS = (KIND_MESSAGE, KIND_FACT, KIND_SUMMARY)

# Roles whose messages make an exchange point; the others are marked skipped.
INDEXED_ROLES = (MessageRole.USER, MessageRole.ASSISTANT)
FACT_SENTENCE_WORDS = 3


@dataclass(frozen=True)
class Document:
    """What a row becomes in Qdrant."""

    kind: str
    row_id: int
    collection: str
    point_id: str
    text: str
    payload: dict
    # The row's version when it was read; also in the payload.
    version: int
    # Other points of the row to delete as this one is written (a summary's passages it
    # no longer has: summary_parts).
    drops: tuple[str, ...] = ()


@dataclass(frozen=True)
class Removal:
    """A row that must have no point (forgotten, expired, gone from the exchange)."""

    kind: str
    row_id: int
    collection: str
    point_id: str
    version: int
    # The row's other points (a summary's passages: summary_parts).
    also: tuple[str, ...] = ()


def model_for(kind: str):
    try:
        return {KIND_MESSAGE: Message, KIND_FACT: Fact, KIND_SUMMARY: Summary}[kind]
    except KeyError:
        raise MemoryServiceError(f"Type d'élément inconnu : {kind!r}.") from None


def collection_for(kind: str, row=None) -> str:
    """The collection of a kind's points; a message of an observed room has its point in live."""
    from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, LIVE

    if kind != KIND_MESSAGE:
        return KNOWLEDGE
    return LIVE if row is not None and row.observed else CONVERSATIONS


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def exchange_root_id(message: Message) -> int:
    """The id that keys an exchange: the user message a reply answers."""
    return message.reply_to_id or message.id


def fact_text(fact: Fact) -> str:
    """The text embedded for a fact.

    A value that is a sentence stands alone (the key would only add noise, and
    two keys for one fact would keep dedup from seeing they are the same); a
    short value ("Mickael") needs its key read as words ("user name : Mickael").
    """
    if len(fact.value.split()) >= FACT_SENTENCE_WORDS:
        return fact.value
    return f"{fact.key.replace('_', ' ')} : {fact.value}"


def exchange_document(root: Message, reply: Message | None) -> Document:
    from memory.stores.vectors import CONVERSATIONS, point_id

    assistant = reply.content if reply else ""
    text = root.content if not assistant else f"{root.content}\n{assistant}"
    return Document(
        kind=KIND_MESSAGE,
        row_id=root.id,
        collection=CONVERSATIONS,
        point_id=point_id(KIND_MESSAGE, root.id),
        text=text,
        payload={
            "channel": root.channel,
            "role": "exchange",
            "user_message": root.content,
            "assistant_message": assistant,
            "author": root.author,
            "timestamp": _iso(root.created_at),
            "message_id": root.id,
            "reply_id": reply.id if reply else None,
            "row_id": root.id,
            "version": root.version,
            "lang": text_language(text),
        },
        version=root.version,
    )


def live_document(message: Message) -> Document:
    """A message of an observed room: one point in ``live`` (author, room, timestamp)."""
    from memory.stores.vectors import LIVE, point_id

    return Document(
        kind=KIND_MESSAGE,
        row_id=message.id,
        collection=LIVE,
        point_id=point_id(KIND_MESSAGE, message.id),
        text=message.content,
        payload={
            "content": message.content,
            "author": message.author,
            "room": message.channel,
            "timestamp": _iso(message.created_at),
            "message_id": message.id,
            "row_id": message.id,
            "version": message.version,
            "lang": text_language(message.content),
        },
        version=message.version,
    )


def live_wanted(message: Message) -> bool:
    """Whether an observed message has a live point: not yet digested, not forgotten or
    excluded, and not small talk ("ok", "lol", "👍" would only ever be noise)."""
    from memory.services.relevance import is_small_talk

    return (
        message.digested_at is None
        and message.forgetting_id is None
        and not message.memory_excluded
        and not is_small_talk(message.content)
    )


def exchange_wanted(root: Message, reply: Message | None) -> bool:
    """Whether an exchange has a point: not when both sides are small talk (« merci » →
    « D'accord. », an unanswered « Tu vas bien ? »). Such a point is close to every
    query, as small talk is (relevance.py): QA saw « merci — D'accord » injected for
    « Qui est mon médecin ? »."""
    return exchange_texts_wanted(root.content, reply.content if reply is not None else None)


def exchange_texts_wanted(user: str, reply: str | None) -> bool:
    """exchange_wanted on the texts of an exchange (its user message, its first reply or
    None): also the rule of what the retrieval's time source may inject (retrieval.sources
    window_ids), which reads the texts alone."""
    from memory.services.relevance import is_small_talk

    return not (is_small_talk(user) and (reply is None or is_small_talk(reply)))


def fact_point_type(kind: str) -> str:
    """The payload ``type`` of a Fact row's point: "fact" for the owner's, "self" / "goal".

    The agent's self and goals live in ``knowledge`` beside the owner's facts (same
    rows, same state machine, point ids, reindex and doctor); their own ``type``
    keeps them out of every search that asks for facts (a keyword index filters it).
    """
    from memory.models import FactKind

    return "fact" if kind == FactKind.OWNER else str(kind)


def fact_document(fact: Fact) -> Document:
    from memory.stores.vectors import KNOWLEDGE, point_id

    return Document(
        kind=KIND_FACT,
        row_id=fact.id,
        collection=KNOWLEDGE,
        point_id=point_id(KIND_FACT, fact.id),
        text=fact_text(fact),
        payload={
            "type": fact_point_type(fact.kind),
            "category": fact.category,
            "channel": fact.channel,
            "key": fact.key,
            "content": fact.value,
            "timestamp": _iso(fact.created_at),
            "updated_at": _iso(fact.updated_at),
            "subjects": list(fact.subjects),
            "memory_type": fact.memory_type,
            "importance": fact.importance,
            "expires_at": _iso(fact.expires_at),
            "row_id": fact.id,
            "version": fact.version,
            "lang": text_language(fact_text(fact)),
        },
        version=fact.version,
    )


def summary_documents(summary: Summary) -> list[Document]:
    """The whole summary's point, and one per passage when it is long (summary_parts); the
    whole one drops the passages the summary no longer has."""
    from memory.services.summary_parts import summary_part_ids, summary_parts
    from memory.stores.vectors import KNOWLEDGE, point_id

    payload = {
        "type": "summary",
        "channel": summary.channel,
        "key": "",
        "content": summary.content,
        "timestamp": _iso(summary.date),
        "subjects": [],
        "memory_type": "summary",
        "importance": None,
        "expires_at": None,
        "row_id": summary.id,
        "version": summary.version,
        "lang": text_language(summary.content),
    }
    parts = summary_parts(summary.content)
    part_ids = summary_part_ids(summary.id)
    whole = Document(
        kind=KIND_SUMMARY,
        row_id=summary.id,
        collection=KNOWLEDGE,
        point_id=point_id(KIND_SUMMARY, summary.id),
        text=summary.content,
        payload=payload,
        version=summary.version,
        drops=tuple(part_ids[len(parts) :]),
    )
    return [
        whole,
        *(
            Document(
                kind=KIND_SUMMARY,
                row_id=summary.id,
                collection=KNOWLEDGE,
                point_id=part_ids[i],
                text=part,
                payload={**payload, "content": part, "part": i, "lang": text_language(part)},
                version=summary.version,
            )
            for i, part in enumerate(parts)
        ),
    ]


def _removal(kind: str, row) -> Removal:
    from memory.services.summary_parts import summary_part_ids
    from memory.stores.vectors import point_id

    also = tuple(summary_part_ids(row.id)) if kind == KIND_SUMMARY else ()
    return Removal(
        kind, row.id, collection_for(kind, row), point_id(kind, row.id), row.version, also
    )


def message_is_root(message: Message) -> bool:
    """Whether a message keys its own exchange point (a user message, or a lone reply)."""
    return message.role in INDEXED_ROLES and message.reply_to_id is None


def _reply_for(root_ids: Sequence[int]) -> dict[int, Message]:
    """The first reply of each exchange that is still part of the memory."""
    replies: dict[int, Message] = {}
    rows = Message.objects.filter(reply_to_id__in=list(root_ids), role=MessageRole.ASSISTANT)
    for reply in rows.order_by("created_at", "id"):
        replies.setdefault(reply.reply_to_id, reply)
    return replies


def desired(kind: str, row_ids: Sequence[int]) -> tuple[list[Document], list[Removal], list[int]]:
    """For rows of one kind (exchange roots for messages): documents, removals, gone ids.

    A row that is forgotten, expired, excluded from memory, or an exchange root
    that is no longer indexable must have no point: a Removal at its version.
    A message of an observed room targets ``live`` instead of ``conversations``
    (its own point, no exchange), and has none once digested.
    """
    documents: list[Document] = []
    removals: list[Removal] = []
    model = model_for(kind)
    rows = {row.id: row for row in model.all_objects.filter(pk__in=list(row_ids))}
    gone = [i for i in row_ids if i not in rows]
    if kind == KIND_MESSAGE:
        live = [
            r
            for r in rows.values()
            if message_is_root(r) and r.forgetting_id is None and not r.memory_excluded
        ]
        replies = _reply_for([r.id for r in live])
        indexable_ids = {r.id for r in live}
        for row in rows.values():
            if row.observed and row.id in indexable_ids:
                if live_wanted(row):
                    documents.append(live_document(row))
                else:  # digested, or small talk: no point (a removal at its version)
                    removals.append(_removal(kind, row))
            elif row.id in indexable_ids and exchange_wanted(row, replies.get(row.id)):
                documents.append(exchange_document(row, replies.get(row.id)))
            else:
                removals.append(_removal(kind, row))
    elif kind == KIND_FACT:
        now = timezone.now()
        for fact in rows.values():
            expired = fact.expires_at is not None and fact.expires_at <= now
            if fact.forgotten or fact.forgetting_id is not None or expired:
                removals.append(_removal(kind, fact))
            else:
                documents.append(fact_document(fact))
    else:
        for summary in rows.values():
            if summary.forgetting_id is not None:
                removals.append(_removal(kind, summary))
            else:
                documents.extend(summary_documents(summary))
    return documents, removals, gone
