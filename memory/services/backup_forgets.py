"""The forgets a forced restore carries over from the memory it replaces.

A forget made after the backup was taken is not in the backup: restored, what it
took would be live again (searchable, injected, and never purged, its forget
gone). Still in its undo window, it has left no erasure mark
(memory.services.erased_marks) to replay. So before the copy ``forgets_read``
reads the replaced database's active forgets and what each took, by the rows'
natural keys (the digests the erasure marks use: a fact's key with its text, a
message's and a summary's channel, date and text; a history line's fact, texts and
date), and after it ``forgets_replay`` takes the restored rows they recognise
again through ``forgetting_take`` (the one implementation of "take it out of the
memory": FTS, points, retrieval logs, admin history, job payloads), under the same
topic, actor, date and undo deadline. A fact is recognised by every key and text it
had (``_fact_marks``: an edit or a rename since the backup changed it), a history line
by each key its fact had; a history line taken for a text the fact said before an edit
(the topic's words) takes the restored fact that says that text again. The owner can
still undo it there, until its deadline; then the hourly purge erases it as it would
have. A fact forgotten alone (its own flag; taken since by a topic forget too, if it was
forgotten alone first) is carried as a forget of its own: the restored row with its id,
recognised by any text it had, is forgotten again (``fact_forget``) at the same date,
before the topic forgets are replayed (so that undoing one gives the fact back
forgotten alone, as it would have). A fact its expiry forgot is carried with that
expiry: the restored copy (the backup's may have none) gets it and is forgotten as
expired (``fact_expire``), as the purge did. An undone forget whose topic a purge
redacted since (forgetting._undone_topics_redact) is carried too: the restored copy
(its id and date) loses its topic again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from memory.models import (
    Actor,
    Fact,
    FactRevision,
    Forgetting,
    ForgettingState,
    Message,
    RevisionReason,
    Summary,
)
from memory.services.erased_marks import (
    MESSAGE_KEY,
    SUMMARY_KEY,
    fact_mark,
    message_mark,
    summary_mark,
)
from memory.services.erased_replay import _stored_moment


@dataclass
class CarriedForget:
    """An active forget of the replaced memory: its row, and the digests of what it took."""

    topic: str
    actor: str
    selection: str
    created_at: datetime
    purge_after: datetime
    facts: set[str] = field(default_factory=set)
    messages: set[str] = field(default_factory=set)
    summaries: set[str] = field(default_factory=set)
    revisions: set[tuple[str, str, str]] = field(default_factory=set)
    alone: bool = False  # one fact forgotten alone (its flag): ``row_id``, ``facts`` its texts
    row_id: int | None = None
    expires_at: datetime | None = None  # alone, by its expiry: the expiry it had
    undone: bool = False  # an undone forget (``row_id``) whose topic was redacted since

    @property
    def topic_forget(self) -> bool:
        return not (self.alone or self.undone)


def _moment(value: object) -> str:
    return _stored_moment(value).astimezone(UTC).isoformat()


def _revision_key(key: str, old: str, new: str, created_at: object) -> tuple[str, str, str]:
    """A history line: its fact's key with each of its texts, and its date."""
    return fact_mark(key, old or ""), fact_mark(key, new or ""), _moment(created_at)


def _columns(model, names) -> str:
    return ", ".join(f'"{model._meta.get_field(name).column}"' for name in names)


def forgets_read(path: Path) -> list[CarriedForget]:
    """The active forgets of the SQLite database at ``path`` (read before a restore replaces it)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return _forgets(db)
    except sqlite3.DatabaseError:  # no such table (an older version), or unreadable
        return []
    finally:
        db.close()


def _forgets(db: sqlite3.Connection) -> list[CarriedForget]:
    return _facts_forgotten_alone(db) + _topic_forgets(db) + _undone_topics_redacted(db)


def _facts_forgotten_alone(db: sqlite3.Connection) -> list[CarriedForget]:
    """Each fact forgotten one by one, with who forgot it (its last FORGOTTEN line), its
    row id and every key and text it had. A fact the TTL took (its last line EXPIRED) is
    carried with its expiry: the backup's copy may have none (set since), or a later one."""
    facts, revisions = Fact._meta.db_table, FactRevision._meta.db_table
    last = (
        f"SELECT r.{{column}} FROM {revisions} r WHERE r.fact_id = f.id AND r.reason IN (?, ?) "
        f"ORDER BY r.id DESC LIMIT 1"
    )
    reasons = [RevisionReason.FORGOTTEN, RevisionReason.EXPIRED]
    rows = db.execute(
        f"SELECT f.id, f.key, f.value, f.forgotten_at, f.expires_at, "
        f"({last.format(column='reason')}), "
        f"({last.format(column='actor')}) FROM {facts} f "
        f"LEFT JOIN {Forgetting._meta.db_table} g ON g.id = f.forgetting_id "
        f"WHERE f.forgotten = 1 AND f.forgotten_at IS NOT NULL "
        f"AND (f.forgetting_id IS NULL OR f.forgotten_at < g.created_at)",
        reasons + reasons,
    ).fetchall()
    carried = []
    for pk, key, value, forgotten_at, expires_at, reason, actor in rows:
        expired = reason == RevisionReason.EXPIRED and expires_at is not None
        carried.append(
            CarriedForget(
                topic="",
                actor=actor or Actor.SYSTEM,
                selection="",
                created_at=_stored_moment(forgotten_at),
                purge_after=_stored_moment(forgotten_at),
                facts=_fact_marks(db, pk, key, value),
                alone=True,
                row_id=pk,
                expires_at=_stored_moment(expires_at) if expired else None,
            )
        )
    return carried


def _topic_forgets(db: sqlite3.Connection) -> list[CarriedForget]:
    from memory.services.forgetting_select import contains_all, topic_terms

    # Our table and column names (from the models), never a value: the values are parameters.
    forgets = {
        pk: CarriedForget(
            topic=topic,
            actor=actor,
            selection=selection,
            created_at=_stored_moment(created_at),
            purge_after=_stored_moment(purge_after),
        )
        for pk, topic, actor, selection, created_at, purge_after in db.execute(
            f"SELECT id, topic, actor, selection, created_at, purge_after "
            f"FROM {Forgetting._meta.db_table} WHERE state = ?",
            [ForgettingState.ACTIVE],
        )
    }
    if not forgets:
        return []
    active = [ForgettingState.ACTIVE]
    taken = f"forgetting_id IN (SELECT id FROM {Forgetting._meta.db_table} WHERE state = ?)"
    for pk, fact_id, key, value in db.execute(
        f"SELECT forgetting_id, id, key, value FROM {Fact._meta.db_table} WHERE {taken}", active
    ):
        forgets[pk].facts |= _fact_marks(db, fact_id, key, value)
    for pk, *values in db.execute(
        f"SELECT forgetting_id, {_columns(Message, MESSAGE_KEY)} "
        f"FROM {Message._meta.db_table} WHERE {taken}",
        active,
    ):
        row = dict(zip(MESSAGE_KEY, values, strict=True))
        forgets[pk].messages.add(
            message_mark(row | {"created_at": _stored_moment(row["created_at"])})
        )
    for pk, *values in db.execute(
        f"SELECT forgetting_id, {_columns(Summary, SUMMARY_KEY)} "
        f"FROM {Summary._meta.db_table} WHERE {taken}",
        active,
    ):
        row = dict(zip(SUMMARY_KEY, values, strict=True))
        forgets[pk].summaries.add(
            summary_mark(row | {"created_at": _stored_moment(row["created_at"])})
        )
    keys_of: dict[int, set[str]] = {}
    for pk, fact_id, key, old, new, created_at in db.execute(
        f"SELECT r.forgetting_id, r.fact_id, f.key, r.old_value, r.new_value, r.created_at "
        f"FROM {FactRevision._meta.db_table} r JOIN {Fact._meta.db_table} f ON f.id = r.fact_id "
        f"WHERE r.{taken}",
        active,
    ):
        forget = forgets[pk]
        # The backup holds the line under the key its fact had then (a rename since).
        if fact_id not in keys_of:
            keys_of[fact_id] = _keys(db, fact_id, key)
        keys = keys_of[fact_id]
        forget.revisions |= {_revision_key(k, old, new, created_at) for k in keys}
        # The text the line was taken for (forgetting_select.history_about) may be the
        # fact's value in the backup, edited away since: a restored fact saying it is the
        # forgotten text, taken with the forget.
        if terms := topic_terms(forget.topic):
            said = [t for t in (old, new) if t and contains_all(t, terms)]
            forget.facts |= {fact_mark(k, t) for k in keys for t in said}
    return [f for f in forgets.values() if f.facts or f.messages or f.summaries or f.revisions]


def _undone_topics_redacted(db: sqlite3.Connection) -> list[CarriedForget]:
    """The undone forgets whose topic a purge redacted (forgetting._undone_topics_redact):
    the backup may hold them from before, their topic in clear. By id and date (the
    replaced memory may not be the one the backup was taken of)."""
    from memory.services.forgetting import PURGED_TOPIC

    rows = db.execute(
        f"SELECT id, actor, selection, created_at, purge_after FROM "
        f"{Forgetting._meta.db_table} WHERE state = ? AND topic = ?",
        [ForgettingState.RESTORED, PURGED_TOPIC],
    )
    return [
        CarriedForget(
            topic=PURGED_TOPIC,
            actor=actor,
            selection=selection,
            created_at=_stored_moment(created_at),
            purge_after=_stored_moment(purge_after),
            undone=True,
            row_id=pk,
        )
        for pk, actor, selection, created_at, purge_after in rows
    ]


def _fact_marks(db: sqlite3.Connection, fact_id: int, key: str, value: str) -> set[str]:
    """A fact as a backup may hold it: each key it had with each text it had (an edit or a
    rename since the backup changed them)."""
    history = db.execute(
        f"SELECT old_value, new_value FROM {FactRevision._meta.db_table} WHERE fact_id = ?",
        [fact_id],
    )
    texts = {value} | {text for pair in history for text in pair if text}
    return {fact_mark(k, text) for k in _keys(db, fact_id, key) for text in texts}


def _keys(db: sqlite3.Connection, fact_id: int, key: str) -> set[str]:
    """The fact's key and those it had before a rename."""
    return {key} | _keys_had(db, fact_id)


def _keys_had(db: sqlite3.Connection, fact_id: int) -> set[str]:
    """The keys the fact had before a rename, from its history (erased_marks.keys_in_change)."""
    import json

    from memory.services.erased_marks import keys_in_change

    keys: set[str] = set()
    for (changes,) in db.execute(
        f"SELECT changes FROM {FactRevision._meta.db_table} WHERE fact_id = ? "
        f"AND changes LIKE '%\"key\"%'",
        [fact_id],
    ):
        try:
            keys |= keys_in_change(json.loads(changes))
        except (TypeError, ValueError):
            continue
    return keys


def forgets_replay(carried: list[CarriedForget]) -> dict[str, int]:
    """After a restore: each carried forget takes the restored rows it recognises (rows
    already taken by a forget of the backup stay with theirs). Returns what was taken."""
    done = {"forgets": 0, "facts": 0, "messages": 0, "summaries": 0}
    if not carried:
        return done
    from memory.services.forgetting import forgetting_take, topic_terms

    with transaction.atomic():
        for forget, found in zip(carried, _found(carried), strict=True):
            if forget.undone:
                _topic_redact_again(forget)
                continue
            if found.empty:
                continue
            if forget.alone:
                done["facts"] += _forget_again_alone(forget, found.facts)
                done["forgets"] += 1
                continue
            chosen = found.selection(forget.selection)
            forgetting = forgetting_take(
                topic=forget.topic,
                chosen=chosen,
                actor=forget.actor,
                retention=forget.purge_after - timezone.now(),
                terms=topic_terms(forget.topic),
            )
            # The same forget: its date (an undo compares it with a fact's forgotten_at) and
            # its deadline (a forget past it is purged by the replay of the erasure marks).
            Forgetting.objects.filter(pk=forgetting.pk).update(
                created_at=forget.created_at, purge_after=forget.purge_after
            )
            done["forgets"] += 1
            done["facts"] += len(found.facts)
            done["messages"] += len(found.messages)
            done["summaries"] += len(found.summaries)
    return done


def _forget_again_alone(forget: CarriedForget, fact_ids: list[int]) -> int:
    """Forget the restored copies of a fact forgotten alone, at its date (the undo window
    and the purge count from it); one its expiry forgot, with that expiry, as expired (an
    expired fact is out as a forgotten one is, and its restore drops the expiry). Returns
    how many were forgotten again."""
    from memory.services.expiry import fact_expire
    from memory.services.facts import fact_forget

    again = 0
    for fact in Fact.all_objects.select_for_update().filter(pk__in=fact_ids, forgotten=False):
        if forget.expires_at is not None:
            Fact.all_objects.filter(pk=fact.pk).update(expires_at=forget.expires_at)
            fact.expires_at = forget.expires_at
            fact_expire(fact=fact, now=forget.created_at)
        else:
            fact_forget(fact=fact, actor=forget.actor)
            Fact.all_objects.filter(pk=fact.pk).update(forgotten_at=forget.created_at)
        again += 1
    return again


def _topic_redact_again(forget: CarriedForget) -> None:
    """The restored copy of an undone forget (its id, its date) loses its topic again."""
    from memory.services.forgetting import PURGED_TOPIC

    Forgetting.objects.filter(
        pk=forget.row_id, created_at=forget.created_at, state=ForgettingState.RESTORED
    ).update(topic=PURGED_TOPIC)


@dataclass
class _Found:
    """The restored rows in memory that one carried forget recognises."""

    messages: dict[int, int] = field(default_factory=dict)  # id -> its exchange's root
    facts: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    revisions: list[int] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.messages or self.facts or self.summaries or self.revisions)

    def selection(self, kind: str):
        """These rows as a forget's selection (what ``forgetting_take`` takes)."""
        from memory.services.forgetting_select import Selection

        return Selection(
            selection=kind,
            exchanges=Message.all_objects.in_bulk(set(self.messages.values())),
            message_ids=set(self.messages),
            members=dict(self.messages),
            facts=list(Fact.all_objects.filter(pk__in=self.facts)),
            summaries=list(Summary.all_objects.filter(pk__in=self.summaries)),
            revisions=list(
                FactRevision.all_objects.select_related("fact").filter(pk__in=self.revisions)
            ),
        )


def _found(carried: list[CarriedForget]) -> list[_Found]:
    """For each carried forget, the restored rows in memory whose natural key it holds."""
    found = [_Found() for _ in carried]
    alone = [(i, f) for i, f in enumerate(carried) if f.alone]
    rows = Fact.all_objects.filter(forgetting=None).in_bulk([f.row_id for _, f in alone])
    for i, forget in alone:  # the row with its id, if it is that fact (one of its texts)
        row = rows.get(forget.row_id)
        if row is not None and fact_mark(row.key, row.value) in forget.facts:
            found[i].facts.append(row.pk)
    carried_topics = [(i, f) for i, f in enumerate(carried) if f.topic_forget]
    facts = {d: found[i] for i, f in carried_topics for d in f.facts}
    messages = {d: found[i] for i, f in enumerate(carried) for d in f.messages}
    summaries = {d: found[i] for i, f in enumerate(carried) for d in f.summaries}
    lines = {d: found[i] for i, f in enumerate(carried) for d in f.revisions}
    in_memory = {"forgetting": None}
    if facts:
        rows = Fact.all_objects.filter(**in_memory).values_list("id", "key", "value")
        for pk, key, value in rows.iterator():
            if (owner := facts.get(fact_mark(key, value))) is not None:
                owner.facts.append(pk)
    if messages:
        rows = Message.all_objects.filter(**in_memory).values("id", "reply_to_id", *MESSAGE_KEY)
        for row in rows.iterator(chunk_size=2000):
            if (owner := messages.get(message_mark(row))) is not None:
                owner.messages[row["id"]] = row["reply_to_id"] or row["id"]
    if summaries:
        rows = Summary.all_objects.filter(**in_memory).values("id", *SUMMARY_KEY)
        for row in rows.iterator():
            if (owner := summaries.get(summary_mark(row))) is not None:
                owner.summaries.append(row["id"])
    if lines:
        rows = FactRevision.all_objects.filter(**in_memory).values_list(
            "id", "fact__key", "old_value", "new_value", "created_at"
        )
        for pk, key, old, new, created_at in rows.iterator():
            if (owner := lines.get(_revision_key(key, old, new, created_at))) is not None:
                owner.revisions.append(pk)
    return found
