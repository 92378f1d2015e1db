"""What was deleted for good stays out: one-way digests of the rows a purge erased.

A purge (the end of a forget's undo window, or the owner's "erase for good") deletes
rows and their history; nothing of their text is kept. Two paths could still bring
that text back from a copy made before: an import of an older export (its rows
match nothing here any more) and a late extraction of a message written before
the erasure. Each erased row leaves an ``ErasedMark``: a digest of its natural key
(the key the import matches rows on) and, for a fact, of its key and of each of
its texts. A digest names nothing and cannot be read back; it only recognises
the same row, or the same fact, offered again.

This module writes the marks (``marks_record``, in the purge's transaction) and
checks what is offered again against them (``erased_since``, ``statement_erased``,
the import's ``marks_known``). A restore brings back a copy older than some
erasures: replaying their marks on it is memory.services.erased_replay.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from memory.models import ErasedMark, Fact, FactRevision, Message, MessageRole, Summary
from memory.models.rules import (
    fact_key_composed,
    fact_key_folded,
    fact_key_folded_before,
    fact_key_folded_with_ligatures,
    text_folded,
)
from memory.selectors import message_written_at
from memory.services.forgetting_restated import key_unaside

# A message's natural key: what the import matches an exported message on.
MESSAGE_KEY = ("channel", "role", "author", "source", "created_at", "content")
SUMMARY_KEY = ("channel", "created_at", "content")


def _mark(kind: str, *parts: object) -> str:
    text = "\x1f".join(_canonical(part) for part in (kind, *parts))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _canonical(part: object) -> str:
    if isinstance(part, datetime):
        return part.astimezone(UTC).isoformat()
    return "" if part is None else str(part)


def _words(text: str) -> str:
    return " ".join(text.split())


def fact_key_mark(key: str) -> str:
    return _mark("fact-key", key)


# The mark kinds of a key folded as now (fact_key_folded) end with this: marks of the fold
# before symbols counted keep their kinds, so each is read with its own fold only (an
# erasure of « niveau_c » today is no erasure of « niveau_c++ »: review).
FOLD_SINCE_SYMBOLS = "/symbols"


def _keys_folded(key: str, *, before: bool) -> set[tuple[str, str]]:
    """(the mark kind's end, ``key`` folded): as now (fact_key_folded), and with ``before``
    as folded before symbols counted (« niveau_c++ » was « niveau_c »), to recognise the
    marks an erasure left then (not a key the older fold emptied: every key of symbols
    alone shared it)."""
    folded = {(FOLD_SINCE_SYMBOLS, fact_key_folded(key))}
    if before:
        # A key's ligatures were kept before they were written out: its marks then.
        folded.add((FOLD_SINCE_SYMBOLS, fact_key_folded_with_ligatures(key)))
    if before and (older := fact_key_folded_before(key)):
        folded.add(("", older))
    return folded


def fact_key_marks(key: str, *, before: bool = True) -> set[str]:
    """The marks an erased fact's key leaves: the key as stored, and what keys that look
    alike share (fact_key_folded): the agent's statements fold onto a fact by it
    (fact_keys.key_as_stored), so once the fact is gone its mark must recognise them.
    ``before``: with the older fold's (_keys_folded), to recognise; an erasure leaves none."""
    return {
        fact_key_mark(key),
        *(
            _mark("fact-key-folded" + fold, folded)
            for fold, folded in _keys_folded(key, before=before)
        ),
    }


def _fact_key_spellings_marks(key: str) -> set[str]:
    """The marks a key offered again is recognised by: the exact marks of its spellings
    (marks left of keys stored before migration 0027 composed them), and, where no fact
    holds the key (the agent's statement would fold onto one: fact_keys.key_as_stored), the
    mark of what keys that look alike share. A fact the owner keeps under this very key
    is not the look-alike twin the owner erased."""
    spellings = {key, fact_key_composed(key), unicodedata.normalize("NFD", key)}
    marks = {fact_key_mark(s) for s in spellings}
    if not Fact.all_objects.filter(key__in=spellings).exists():
        marks |= fact_key_marks(key)
    return marks


def fact_text_mark(value: str) -> str:
    return _mark("fact-text", _words(value))


def fact_mark(key: str, value: str) -> str:
    """A fact as an export holds it: its key with one of its texts."""
    return _mark("fact", key_unaside(key), _words(value))


def fact_alike(key: str, value: str) -> tuple[str, str]:
    """What a fact offered again shares with the one it restates, whatever the spelling of
    its key or of its text (an export edited by hand, another tool's case or accents):
    its folded key (fact_key_folded) and its folded text (text_folded: no case, accents,
    punctuation or spacing)."""
    return fact_key_folded(key_unaside(key)), _text_alike(value)


def _text_alike(text: str, *, ligatures: bool = True) -> str:
    """text_folded, or, for a text of no letter or digit (« 👍 », « ?! »), its words case
    folded: folded to nothing, every such text would look alike."""
    return text_folded(text, ligatures=ligatures) or _words(text).casefold()


def forgotten_alike() -> set[tuple[str, str]]:
    """Every forgotten fact text still undoable, as it looks (fact_alike): a hidden fact's
    value and history, and the texts a forget took from the history of a fact it left (its
    current value aside: that one is live). What an import must not bring back under a
    key or a text typed otherwise."""
    hidden = Q(forgotten=True) | Q(forgetting__isnull=False)
    alike = {
        fact_alike(k, v) for k, v in Fact.all_objects.filter(hidden).values_list("key", "value")
    }
    lines = FactRevision.all_objects.filter(
        Q(fact__forgotten=True) | Q(fact__forgetting__isnull=False) | Q(forgetting__isnull=False)
    ).values_list(
        "fact__key",
        "fact__value",
        "fact__forgotten",
        "fact__forgetting_id",
        "old_value",
        "new_value",
    )
    for key, current, forgotten, forgetting_id, *texts in lines.iterator():
        fact_hidden = forgotten or forgetting_id is not None
        alike |= {fact_alike(key, t) for t in texts if t and (fact_hidden or t != current)}
    return alike


def fact_marks(key: str, value: str, *, before: bool = True) -> set[str]:
    """The marks of a fact with one of its texts: as stored, and as it looks (fact_alike).
    A mark left before texts were folded (its words case folded only) still recognises
    the same retyping; ``before``: and one left before keys' symbols counted
    (_keys_folded), to recognise; an erasure leaves none."""
    marks = {fact_mark(key, value)}
    folded_text = _text_alike(value)
    for fold, folded_key in _keys_folded(key_unaside(key), before=before):
        marks |= {
            _mark("fact-alike" + fold, folded_key, _words(value).casefold()),
            _mark("fact-folded" + fold, folded_key, folded_text),
            # As folded before ligatures were written out: the marks left then.
            _mark("fact-folded" + fold, folded_key, _text_alike(value, ligatures=False)),
        }
    return marks


def message_mark(values: Mapping) -> str:
    return _mark("message", *(values[name] for name in MESSAGE_KEY))


def summary_mark(values: Mapping) -> str:
    return _mark("summary", *(values[name] for name in SUMMARY_KEY))


def said_alike_marks(kind: str, values: Mapping) -> set[str]:
    """The marks a message or summary offered again is recognised by as it looks: its mark
    (said_alike_mark), and the mark its look left before ligatures were written out."""
    legacy = said_alike(kind, values, ligatures=False)
    return {said_alike_mark(kind, values), _mark(f"{kind}-alike", *legacy)}


def said_alike(kind: str, values: Mapping, *, ligatures: bool = True) -> tuple:
    """What a message or a summary (``kind``) offered again shares with the row it copies,
    whatever an export edited by hand retyped: its natural key (MESSAGE_KEY, SUMMARY_KEY)
    with its moment to the second (its offset or its fraction of a second cut) and its
    text folded (text_folded, fact_alike's rule for texts)."""
    names = MESSAGE_KEY if kind == "message" else SUMMARY_KEY
    exact = (values[name] for name in names if name not in ("created_at", "content"))
    return (
        *exact,
        moment_to_the_second(values["created_at"]),
        _text_alike(values["content"], ligatures=ligatures),
    )


def message_alike_anyone(values: Mapping) -> tuple:
    """What a message offered again shares with a forgotten or erased one whoever it names
    as its author (said_alike without the author): a gateway re-sending its history adds
    the sender's name to a message recorded without one (QA: it came back)."""
    return said_alike("message", {**values, "author": ""})


def message_anyone_mark(values: Mapping) -> str:
    """The mark of a message as it looks whoever said it (message_alike_anyone): what its
    erasure leaves."""
    return _mark("message-anyone", *message_alike_anyone(values))


def message_anyone_marks(values: Mapping) -> set[str]:
    """The marks a message offered again is recognised by whoever it names as its author:
    message_anyone_mark, and, for erasures made before they left it, the marks of the same
    message recorded with no author (the default of the API and of our agent's user
    messages)."""
    blank = {**values, "author": ""}
    return {message_anyone_mark(values), message_mark(blank), *said_alike_marks("message", blank)}


def open_question_mark(channel: str, after_id: int) -> str:
    """The mark of an erased question no reply answered yet: the last user message of
    ``channel``, after its row ``after_id`` (its latest user or assistant message left, 0
    for none), dated by the question (not by its erasure). A reply recorded within the
    reply window after it answers it and is not kept (messages._reply_question): the
    erasure took its exchange."""
    return _mark("open-question", channel, after_id)


def _open_questions_marks(messages: QuerySet[Message]) -> dict[str, datetime]:
    """The open_question_mark of each channel whose newest user or assistant messages go
    with ``messages`` and end with a user message (no reply yet) -> when that question was
    asked: the mark is dated by it, so that a reply is judged by its distance to the
    question (messages.REPLY_WINDOW), whenever the erasure came (review)."""
    spoken = (MessageRole.USER, MessageRole.ASSISTANT)
    # The owner's conversation only, as messages._reply_question reads it: what an observed
    # room said is nobody's question to the agent.
    gone = list(
        messages.filter(role__in=spoken)
        .exclude(observed=True)
        .values_list("id", "channel", "role", "created_at")
    )
    ids = {pk for pk, _, _, _ in gone}
    marks: dict[str, datetime] = {}
    for channel in {channel for _, channel, _, _ in gone}:
        left = (
            Message.all_objects.filter(channel=channel, role__in=spoken)
            .exclude(observed=True)
            .exclude(pk__in=ids)
        )
        after = left.aggregate(top=Max("id"))["top"] or 0
        tail = sorted((pk, role, at) for pk, c, role, at in gone if c == channel and pk > after)
        if tail and tail[-1][1] == MessageRole.USER:
            marks[open_question_mark(channel, after)] = tail[-1][2]
    return marks


def said_alike_mark(kind: str, values: Mapping) -> str:
    """The mark of a message or summary as it looks (said_alike): what an import matches a
    retyped row on, and what its erasure leaves."""
    return _mark(f"{kind}-alike", *said_alike(kind, values))


def moment_to_the_second(moment: datetime) -> datetime:
    """``moment`` in UTC without its fraction of a second (an edited export may cut it)."""
    return moment.astimezone(UTC).replace(microsecond=0)


def key_renames(fact_ids: list[int]) -> list[tuple[int, str, str, datetime]]:
    """The « key » changes of these facts' histories: (fact id, old key, new key, when),
    "" for a side a line does not say. One read for both uses of an erasure: every key a
    fact had (a backup or an export taken before a rename holds it under one of them: QA,
    renamed then erased, a restore brought it back) and when it left each."""
    lines = FactRevision.all_objects.filter(fact_id__in=fact_ids, changes__has_key="key")
    return [
        (fact_id, *key_change(changes), at)
        for fact_id, changes, at in lines.values_list("fact_id", "changes", "created_at")
    ]


def key_change(changes: object) -> tuple[str, str]:
    """(old, new) of a history line's « key » change, "" for a side it does not say."""
    pair = changes.get("key") if isinstance(changes, dict) else None
    if not isinstance(pair, list) or len(pair) != 2:
        return "", ""
    old, new = (k if isinstance(k, str) else "" for k in pair)
    return old, new


def keys_in_change(changes: object) -> set[str]:
    """The keys a history line's « key » change names (before and after)."""
    return {k for k in key_change(changes) if k}


def marks_record(
    *,
    facts: QuerySet[Fact],
    revisions: QuerySet[FactRevision],
    messages: QuerySet[Message],
    summaries: QuerySet[Summary],
    now: datetime | None = None,
) -> int:
    """Leave a mark for each row about to be deleted for good (the caller's transaction)."""
    digests: set[str] = set()
    moment = now or timezone.now()
    rows = list(facts.values_list("id", "key", "value"))
    renames = key_renames([pk for pk, _, _ in rows])
    renamed: dict[int, set[str]] = {}
    for fact_id, old_key, new_key, _ in renames:
        renamed.setdefault(fact_id, set()).update(k for k in (old_key, new_key) if k)
    key_marks = _key_marks_left(rows, renames, moment)
    for pk, key, value in rows:
        for had in (key, *renamed.get(pk, ())):
            digests |= fact_marks(had, value, before=False)
        digests.add(fact_text_mark(value))
    staying = _texts_staying(facts, revisions)
    for fact_id, key, old, new in revisions.values_list(
        "fact_id", "fact__key", "old_value", "new_value"
    ):
        for text in (old, new):
            if text and text not in staying.get(fact_id, ()):
                for had in (key, *renamed.get(fact_id, ())):
                    digests |= fact_marks(had, text, before=False)
                digests.add(fact_text_mark(text))
    for row in messages.values(*MESSAGE_KEY):
        digests |= {
            message_mark(row),
            said_alike_mark("message", row),
            message_anyone_mark(row),
        }
    questions = _open_questions_marks(messages)
    for row in summaries.values(*SUMMARY_KEY):
        digests |= {summary_mark(row), said_alike_mark("summary", row)}
    key_marks = {d: at for d, at in key_marks.items() if d not in digests}
    ErasedMark.objects.bulk_create(
        [ErasedMark(digest=d, erased_at=moment) for d in sorted(digests)]
        + [ErasedMark(digest=d, erased_at=at) for d, at in sorted(key_marks.items())]
        + [ErasedMark(digest=d, erased_at=asked) for d, asked in sorted(questions.items())],
        batch_size=500,
    )
    return len(digests) + len(key_marks) + len(questions)


def _key_taken_at(holder: Fact, key: str) -> datetime:
    """When ``holder`` took ``key``: its creation, or its last rename to it (QA 4: a fact
    renamed to the key long after its creation dated the mark before the erased fact
    left the key, and the erased words came back)."""
    taken = [at for _, _, new_key, at in key_renames([holder.pk]) if new_key == key]
    return max([holder.created_at, *taken])


def _key_marks_left(
    rows: list[tuple[int, str, str]],
    renames: list[tuple[int, str, str, datetime]],
    now: datetime,
) -> dict[str, datetime]:
    """The key marks of the erased facts ``rows`` (id, key, value), each dated by when the
    fact left that key (``renames``: their key_renames): a late statement of the key drawn from a message written before
    that moment may be about the erased fact (refused); one written after is about what
    holds the key since. The fact's key at the erasure: now. A key it was renamed from:
    the rename (QA 3: the old key in other words was stored again). The key a fact set
    aside had (« medecin » of « medecin (fait oublié n° 1) »): when the fact holding it now
    took it, if one does (QA 3: the live fact's late statements were refused, lost)."""
    ids = [pk for pk, _, _ in rows]
    left: dict[int, dict[str, datetime]] = {}
    for fact_id, old_key, _, at in renames:
        if old_key:
            had = left.setdefault(fact_id, {})
            had[old_key] = max(at, had.get(old_key, at))
    marks: dict[str, datetime] = {}
    for pk, key, _ in rows:
        plain = key_unaside(key)
        dated = dict(left.get(pk, {}))
        if plain != key:
            holder = Fact.all_objects.filter(key=plain).exclude(pk__in=ids).first()
            dated[plain] = _key_taken_at(holder, plain) if holder is not None else now
        else:
            dated[key] = now
        for had, at in dated.items():
            for digest in fact_key_marks(key_unaside(had), before=False):
                marks[digest] = max(min(at, now), marks.get(digest, at))
    return marks


def _texts_staying(facts: QuerySet[Fact], revisions: QuerySet[FactRevision]) -> dict[int, set[str]]:
    """Per fact that stays, the texts it still holds once ``revisions`` are deleted: its
    value and its other history lines' texts. A forget takes the history lines of a fact it
    leaves (an old value about the topic); a line's other text is often the live value
    (QA: marked erased with the line, it was deleted by a restore and refused by the
    import and the agent's statements)."""
    leaving = set(facts.values_list("id", flat=True))
    lines = set(revisions.values_list("id", flat=True))
    kept = set(revisions.values_list("fact_id", flat=True)) - leaving
    staying: dict[int, set[str]] = {}
    for fact_id, value in Fact.all_objects.filter(pk__in=kept).values_list("id", "value"):
        staying.setdefault(fact_id, set()).add(value)
    others = FactRevision.all_objects.filter(fact_id__in=kept).exclude(pk__in=lines)
    for fact_id, old, new in others.values_list("fact_id", "old_value", "new_value"):
        staying.setdefault(fact_id, set()).update((old, new))
    return staying


def marks_known() -> set[str]:
    """Every mark left (for an import, read once)."""
    return set(ErasedMark.objects.values_list("digest", flat=True))


def erased_since(digests: Iterable[str], moment: datetime | None) -> bool:
    """Whether one of these was erased after ``moment`` (None: at any time)."""
    marks = ErasedMark.objects.filter(digest__in=list(digests))
    if moment is not None:
        marks = marks.filter(erased_at__gte=moment)
    return marks.exists()


def fact_erased_since(*, key: str, value: str, moment: datetime | None) -> bool:
    """Whether a fact under this key (or one that looks alike), or with this text, was erased
    after ``moment``."""
    return erased_since([*_fact_key_spellings_marks(key), fact_text_mark(value)], moment)


def statement_erased(*, key: str, value: str, actor: str, source_message_id: int | None) -> bool:
    """Whether an agent statement comes from a message written before the erasure of a fact
    under its key or with its text (a message gone counts as before): it must not bring
    that fact back. With no message (a tool, MCP) the statement is news."""
    from memory.models import Actor

    if actor != Actor.AGENT or source_message_id is None:
        return False
    return fact_erased_since(key=key, value=value, moment=message_written_at(source_message_id))
