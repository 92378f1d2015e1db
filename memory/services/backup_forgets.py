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
topic, actor, date and undo deadline. A history line taken for a text the fact said
before an edit (the topic's words) takes the restored fact that says that text again. The owner can still undo it there, until its
deadline; then the hourly purge erases it as it would have. A fact forgotten alone
(its own flag; taken since by a topic forget too, if it was forgotten alone first) is
carried as a forget of its own: the restored row with its id, recognised by any text
it had (an edit since the backup changed it), is forgotten again (``fact_forget``) at
the same date, before the topic forgets are replayed (so that undoing one gives the
fact back forgotten alone, as it would have).
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
    return _facts_forgotten_alone(db) + _topic_forgets(db)


def _facts_forgotten_alone(db: sqlite3.Connection) -> list[CarriedForget]:
    """Each fact forgotten one by one, with who forgot it (its last FORGOTTEN line), its
    row id and every text it had. A fact the TTL took (its last line EXPIRED) is not
    carried: the restored copy has the same expiry, and the purge takes it again."""
    facts, revisions = Fact._meta.db_table, FactRevision._meta.db_table
    last = (
        f"SELECT r.{{column}} FROM {revisions} r WHERE r.fact_id = f.id AND r.reason IN (?, ?) "
        f"ORDER BY r.id DESC LIMIT 1"
    )
    reasons = [RevisionReason.FORGOTTEN, RevisionReason.EXPIRED]
    rows = db.execute(
        f"SELECT f.id, f.key, f.value, f.forgotten_at, ({last.format(column='reason')}), "
        f"({last.format(column='actor')}) FROM {facts} f "
        f"LEFT JOIN {Forgetting._meta.db_table} g ON g.id = f.forgetting_id "
        f"WHERE f.forgotten = 1 AND f.forgotten_at IS NOT NULL "
        f"AND (f.forgetting_id IS NULL OR f.forgotten_at < g.created_at)",
        reasons + reasons,
    ).fetchall()
    carried = []
    for pk, key, value, forgotten_at, reason, actor in rows:
        if reason == RevisionReason.EXPIRED:
            continue
        history = db.execute(
            f"SELECT old_value, new_value FROM {revisions} WHERE fact_id = ?", [pk]
        )
        texts = {value} | {text for pair in history for text in pair if text}
        keys = {key} | _keys_had(db, pk)  # a backup before a rename holds it under an old one
        carried.append(
            CarriedForget(
                topic="",
                actor=actor or Actor.SYSTEM,
                selection="",
                created_at=_stored_moment(forgotten_at),
                purge_after=_stored_moment(forgotten_at),
                facts={fact_mark(k, text) for k in keys for text in texts},
                alone=True,
                row_id=pk,
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
        forgets[pk].facts |= {fact_mark(k, value) for k in {key} | _keys_had(db, fact_id)}
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
    for pk, key, old, new, created_at in db.execute(
        f"SELECT r.forgetting_id, f.key, r.old_value, r.new_value, r.created_at "
        f"FROM {FactRevision._meta.db_table} r JOIN {Fact._meta.db_table} f ON f.id = r.fact_id "
        f"WHERE r.{taken}",
        active,
    ):
        forget = forgets[pk]
        forget.revisions.add(_revision_key(key, old, new, created_at))
        # The text the line was taken for (forgetting_select.history_about) may be the
        # fact's value in the backup, edited away since: a restored fact saying it is the
        # forgotten text, taken with the forget.
        if terms := topic_terms(forget.topic):
            said = (t for t in (old, new) if t and contains_all(t, terms))
            forget.facts |= {fact_mark(key, t) for t in said}
    return [f for f in forgets.values() if f.facts or f.messages or f.summaries or f.revisions]


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
    and the purge count from it). Returns how many were forgotten again."""
    from memory.services.facts import fact_forget

    again = 0
    for fact in Fact.all_objects.filter(pk__in=fact_ids, forgotten=False):
        fact_forget(fact=fact, actor=forget.actor)
        Fact.all_objects.filter(pk=fact.pk).update(forgotten_at=forget.created_at)
        again += 1
    return again


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
    carried_topics = [(i, f) for i, f in enumerate(carried) if not f.alone]
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
