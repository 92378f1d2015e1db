"""After a restore, the erasures made since the backup was taken stand.

A restore replaces the database with a copy made before: the rows erased since are in
it again. ``marks_read`` reads the erasure marks of the database a restore replaces
(before the copy), and ``marks_replay`` keeps them and deletes again every restored
row one of them recognises, as the erasure deleted it. The marks themselves (what an
erased row leaves, how a row offered again is recognised) are in
memory.services.erased_marks.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from django.db.models import Q
from django.utils import timezone

from memory.models import ErasedMark, Fact, FactRevision, Message, MessageRole, Summary
from memory.services.erased_marks import (
    MESSAGE_KEY,
    SUMMARY_KEY,
    fact_mark,
    marks_known,
    message_mark,
    summary_mark,
)


def marks_read(path) -> list[tuple[str, str]]:
    """The marks of the SQLite database at ``path`` (read before a restore replaces it)."""
    import sqlite3

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(f"SELECT digest, erased_at FROM {ErasedMark._meta.db_table}").fetchall()
    except sqlite3.DatabaseError:  # no such table (an older version), or unreadable
        return []
    finally:
        db.close()


def marks_replay(marks: Iterable[tuple[str, object]]) -> dict[str, int]:
    """After a restore: the erasures made since the backup was taken stand. Their marks are
    kept, and every restored row one of them recognises is deleted again as an erasure
    deletes it: its FTS entries by the triggers, its points by a durable job (and
    ``reindex --recreate`` rebuilds them all anyway), its copies in the retrieval logs,
    the admin's history and the pending jobs redacted (``redact_copies``). A restored
    forget left with none of its rows is marked as its purge marks it (state purged,
    topic redacted: no longer undoable, its topic gone), and a restored forget past its
    retention window is purged now (``forgettings_purge``)."""
    from django.db import transaction

    known = marks_known()
    missing = {digest: at for digest, at in marks if digest not in known}
    with transaction.atomic():
        ErasedMark.objects.bulk_create(
            [ErasedMark(digest=d, erased_at=_stored_moment(at)) for d, at in missing.items()],
            batch_size=500,
        )
        known |= set(missing)
        return _rows_delete(known)


def _stored_moment(at: object) -> datetime:
    """A date read from SQLite by ``marks_read``: Django stores it in UTC with no offset
    (read as the local time zone, a mark would move by hours: a statement from a message
    written just before the erasure would count as news)."""
    from django.utils.dateparse import parse_datetime

    moment = at if isinstance(at, datetime) else parse_datetime(str(at))
    return moment.replace(tzinfo=UTC) if timezone.is_naive(moment) else moment


def _rows_delete(known: set[str]) -> dict[str, int]:
    from memory.models import Forgetting, ForgettingState
    from memory.services.copies_redaction import redact_copies
    from memory.services.forgetting import forgetting_purge, forgettings_purge
    from memory.services.removal import remove_deleted_points

    messages = [
        row["id"]
        for row in Message.all_objects.values("id", *MESSAGE_KEY).iterator(chunk_size=2000)
        if message_mark(row) in known
    ]
    summaries = [
        row["id"]
        for row in Summary.all_objects.values("id", *SUMMARY_KEY).iterator(chunk_size=2000)
        if summary_mark(row) in known
    ]
    facts = [
        pk
        for pk, key, value in Fact.all_objects.values_list("id", "key", "value").iterator()
        if fact_mark(key, value) in known
    ]
    lines = [
        pk
        for pk, key, old, new in FactRevision.all_objects.exclude(fact_id__in=facts)
        .values_list("id", "fact__key", "old_value", "new_value")
        .iterator()
        if any(text and fact_mark(key, text) in known for text in (old, new))
    ]
    revisions = FactRevision.all_objects.filter(Q(fact_id__in=facts) | Q(pk__in=lines))
    gone = Message.all_objects.filter(Q(pk__in=messages) | Q(reply_to_id__in=messages))
    message_ids = list(gone.values_list("id", flat=True))
    roots = list(gone.filter(reply_to__isnull=True).values_list("id", flat=True))
    texts = list(gone.filter(role=MessageRole.USER).values_list("content", flat=True))
    # The restored forgets that took one of these rows (an erased forget, restored from
    # before its erasure, is still undoable there, its topic in clear).
    forgets = set()
    for rows in (
        Message.all_objects.filter(pk__in=message_ids),
        Summary.all_objects.filter(pk__in=summaries),
        Fact.all_objects.filter(pk__in=facts),
        revisions,
    ):
        forgets |= set(rows.exclude(forgetting=None).values_list("forgetting_id", flat=True))
    revisions.delete()
    Summary.all_objects.filter(pk__in=summaries).delete()
    gone.filter(reply_to__isnull=False).delete()
    gone.delete()
    # The copies the erasure redacts (memory.services.removal): once the exchanges are
    # gone (a pending job that names one loses its candidates), before the facts go (a
    # job's candidates stating an erased fact's key are dropped).
    redact_copies(
        items={
            *(f"message:{i}" for i in message_ids),
            *(f"fact:{i}" for i in facts),
            *(f"summary:{i}" for i in summaries),
        },
        message_texts=texts,
    )
    Fact.all_objects.filter(pk__in=facts).delete()
    remove_deleted_points(roots, facts, summaries, history=bool(lines))
    # A forget with nothing left gets its purge's marks (its purge deletes nothing more).
    emptied = (
        Forgetting.objects.filter(pk__in=forgets, state=ForgettingState.ACTIVE)
        .exclude(messages__isnull=False)
        .exclude(facts__isnull=False)
        .exclude(summaries__isnull=False)
        .exclude(revisions__isnull=False)
    )
    for forgetting in emptied.select_for_update():
        forgetting_purge(forgetting)
    # A forget past its retention window in the restored data: purged now, as the sweep would.
    forgettings_purge()
    return {"messages": len(messages), "summaries": len(summaries), "facts": len(facts)}
