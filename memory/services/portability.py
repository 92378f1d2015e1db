"""Export of the memory as versioned JSONL (the import is memory.services.portability_import).

One file, one record per line. The first line is the header
``{"format": "makilab-memory", "version": 1, "exported_at": ..., "since": ...}``;
every other line is an object with a ``type``:

- ``settings``: the memory settings' knobs (``MemorySettings`` minus the notes ones);
- ``context_notes``: ``enabled``, ``notes`` (fixed paths) and ``tag``;
- ``channel``: ``channel`` and ``observed``, one per channel with settings (an observed
  room is one the agent listens to without answering);
- ``message``: ``id`` (a reference inside the file), channel, role, author,
  source, content, created_at, compacted, ``reply_to`` (the ``id`` of an earlier
  message line, or null); a message of an observed room also has
  ``observed`` (true) and ``digested_at`` (when the digest read it, or null);
- ``summary``: channel, content, message_count, period_start, period_end, created_at;
- ``fact``: key, value, memory_type, importance, subjects, source, channel,
  ``source_message`` (the ``id`` of a message line, or null), expires_at,
  created_at, updated_at, last_accessed_at, access_count, owner_fields and
  ``revisions`` (actor, reason, old_value, new_value, changes, note, created_at).

Forgotten content never leaves: the default managers leave out what a topic
forget took and the exchanges that asked to forget, and facts the owner
forgot (or that expired) are left out with their history. Vectors are not
exported: they are derived, and the importing side may use another embedder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from memory.models import ChannelSettings, Fact, MemorySettings, Message, Summary
from memory.services.fact_ownership import STATED_FIELDS
from memory.services.search import date_clamp
from memory.services.settings import EDITABLE_FIELDS

FORMAT_NAME = "makilab-memory"
FORMAT_VERSION = 1
NOTES_FIELDS = {
    "obsidian_context_enabled": "enabled",
    "obsidian_context_notes": "notes",
    "obsidian_context_tag": "tag",
}
SETTINGS_FIELDS = tuple(name for name in EDITABLE_FIELDS if name not in NOTES_FIELDS)
MESSAGE_FIELDS = ("channel", "role", "author", "source", "content", "created_at", "compacted")
# Written for the messages of observed rooms only.
MESSAGE_OBSERVED_FIELDS = ("observed", "digested_at")
SUMMARY_FIELDS = (
    "channel",
    "content",
    "message_count",
    "period_start",
    "period_end",
    "created_at",
)
# What a write may state, plus what the fact's life recorded.
FACT_FIELDS = (
    "key",
    *STATED_FIELDS,
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "owner_fields",
)
# Only on the agent's self and goal items (Fact.kind), absent from the owner's facts:
# files written before them, and owner facts, read as kind "owner" without category.
FACT_AGENT_FIELDS = ("kind", "category")
REVISION_FIELDS = ("actor", "reason", "old_value", "new_value", "changes", "note", "created_at")
CHUNK = 500


def _value(value: object) -> object:
    # Every date within the years memory_import reads (DATE_YEARS): a file this writes,
    # the import takes. Stored moments are in UTC, where a few can lie past them.
    return date_clamp(value).isoformat() if isinstance(value, datetime) else value


def _fields(row, names: tuple[str, ...]) -> dict[str, object]:
    return {name: _value(getattr(row, name)) for name in names}


def _line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def exportable_facts(since: datetime | None = None):
    """Facts in the memory: not forgotten by the owner, expired or taken by a topic forget."""
    facts = Fact.objects.filter(forgotten=False).filter(_not_expired())
    if since is not None:
        facts = facts.filter(updated_at__gte=since)
    return facts.order_by("id")


def _not_expired():
    """An expired fact the hourly purge has not reached yet is out of the memory already."""
    return Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())


def exportable_agent_items(since: datetime | None = None):
    """The agent's self and goal items in the memory (see exportable_facts)."""
    from memory.services.self_memory_validate import AGENT_KINDS

    items = Fact.all_objects.filter(
        _not_expired(), forgetting__isnull=True, forgotten=False, kind__in=AGENT_KINDS
    )
    if since is not None:
        items = items.filter(updated_at__gte=since)
    return items.order_by("id")


def _messages(since: datetime | None) -> Iterator[Message]:
    """Live messages (by id, so a reply comes after what it answers), whole exchanges only.

    A reply whose message is not in the memory (forgotten) is left out: on its own
    it would become an exchange of its own. With ``since``, the message a reply
    answers is included even when older, so an exchange is never cut.
    """
    live = Message.objects.all()
    rows = live
    if since is not None:
        # Subqueries, not id lists: the memory may hold more rows than SQL variables allow.
        answered = live.filter(created_at__gte=since, reply_to__isnull=False).values("reply_to_id")
        rows = live.filter(Q(created_at__gte=since) | Q(pk__in=answered))
    kept: set[int] = set()
    for message in rows.order_by("id").iterator(chunk_size=CHUNK):
        if message.reply_to_id is not None and message.reply_to_id not in kept:
            continue
        kept.add(message.id)
        yield message


def export_records(*, since: datetime | None = None) -> Iterator[dict]:
    """Every record of the export, header first.

    Read without a transaction: on this SQLite every transaction takes the
    write lock (IMMEDIATE), and an export streamed to a slow client would hold
    it and stop the service's writes. Each table is read by one statement (its
    own snapshot), and references are written only to lines already written
    (a reply after what it answers, a fact's message among the exported ones),
    so the file is always valid; a row written meanwhile may or may not be in
    it. ``memory_backup`` is the point-in-time copy.
    """
    yield {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "exported_at": timezone.now().isoformat(),
        "since": _value(since),
    }
    settings = MemorySettings.load()
    yield {"type": "settings", **_fields(settings, SETTINGS_FIELDS)}
    yield {
        "type": "context_notes",
        **{short: getattr(settings, name) for name, short in NOTES_FIELDS.items()},
    }
    for channel, observed in ChannelSettings.objects.values_list("channel", "observed"):
        yield {"type": "channel", "channel": channel, "observed": observed}
    exported: set[int] = set()
    for message in _messages(since):
        exported.add(message.id)
        record = {
            "type": "message",
            "id": message.id,
            **_fields(message, MESSAGE_FIELDS),
            "reply_to": message.reply_to_id,
        }
        if message.observed:
            # A live extract, not an exchange: imported as one (and digested or not).
            record |= _fields(message, MESSAGE_OBSERVED_FIELDS)
        yield record
    summaries = Summary.objects.all()
    if since is not None:
        summaries = summaries.filter(created_at__gte=since)
    for summary in summaries.order_by("id").iterator(chunk_size=CHUNK):
        yield {"type": "summary", **_fields(summary, SUMMARY_FIELDS)}
    owner = exportable_facts(since).prefetch_related("revisions")
    agent = exportable_agent_items(since).prefetch_related("revisions")
    for names, facts in (((), owner), (FACT_AGENT_FIELDS, agent)):
        for fact in facts.iterator(chunk_size=CHUNK):
            revisions = sorted(fact.revisions.all(), key=lambda r: (r.created_at, r.id))
            yield {
                "type": "fact",
                **_fields(fact, FACT_FIELDS),
                **_fields(fact, names),
                "source_message": (
                    fact.source_message_id if fact.source_message_id in exported else None
                ),
                "revisions": [_fields(r, REVISION_FIELDS) for r in revisions],
            }


def export_lines(*, since: datetime | None = None) -> Iterator[str]:
    """The export as JSONL lines (a generator: the HTTP view streams it)."""
    for record in export_records(since=since):
        yield _line(record)


def memory_export(*, path, since: datetime | None = None) -> dict[str, int]:
    """Write the export to ``path``; returns the number of records per type.

    The file is written whole or not at all: the lines go to a temporary file in
    the same folder, which replaces ``path`` only once complete and on disk. An
    export stopped half-way (a full disk, Ctrl-C, an error) leaves an earlier
    export at ``path`` as it was, and no cut file. A path that is not a regular
    file (a pipe, /dev/stdout) is written in place: it cannot be replaced.
    """
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        with open(target, "w", encoding="utf-8") as handle:
            return export_write(handle, since)
    folder, name = os.path.split(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            counts = export_write(handle, since)
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(target):  # an earlier export keeps its permissions
            shutil.copymode(target, temporary)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _folder_sync(folder or ".")
    return counts


def export_write(handle, since: datetime | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in export_records(since=since):
        handle.write(_line(record))
        if "type" in record:
            counts[record["type"]] = counts.get(record["type"], 0) + 1
    return counts


def _folder_sync(folder: str) -> None:
    """Make the rename itself durable (best effort: not every system can fsync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


BAD_SINCE = "Date invalide pour --since : « {value} » (AAAA-MM-JJ ou ISO 8601 attendu)."


def parse_since(value: str) -> datetime:
    """A date (midnight, local time) or a datetime; naive values are local time."""
    from django.utils.dateparse import parse_date, parse_datetime

    from memory.services.search import DATE_RANGE_MESSAGE, NO_SUCH_DATE_MESSAGE, date_in_range

    try:
        parsed = parse_datetime(value)
        if parsed is None:
            day = parse_date(value)
            parsed = datetime(day.year, day.month, day.day) if day else None
    except ValueError:  # the right form, out of the calendar
        raise ValueError(f"--since : {NO_SUCH_DATE_MESSAGE.format(value=value)}") from None
    if parsed is None:
        raise ValueError(BAD_SINCE.format(value=value))

    if not date_in_range(parsed):
        raise ValueError(f"--since : {DATE_RANGE_MESSAGE}")
    return timezone.make_aware(parsed) if timezone.is_naive(parsed) else parsed
