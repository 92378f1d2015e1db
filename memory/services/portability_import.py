"""Import of a memory export (the format is described in memory.services.portability).

All or nothing: the whole file is read in one transaction, and the first line
that is not valid stops it with a French error naming the line
("ligne 12 : ...") and leaves the memory as it was.

Idempotent: rows are matched on stable keys, so importing the same file twice
changes nothing the second time:

- a fact on its key. A key that exists with the same value is left as is;
  with another value, the memory's value is kept (the owner may have edited
  it) and the key is reported as a conflict; a key forgotten here stays
  forgotten (reported too). Revisions come with a fact that is created;
- a message on (channel, role, author, source, created_at, content), a
  summary on (channel, created_at, content); a row forgotten here is not
  brought back;
- the settings are the file's: only the knobs that differ are written.

New rows enter through the FTS5 triggers like any insert and are left
pending for the indexing machine (``rows_changed``): the running service's
sweep or ``manage.py reindex`` embeds them with the embedder configured here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.exceptions import MemoryServiceError
from memory.models import Fact, FactRevision, MemorySettings, Message, Summary
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, rows_changed
from memory.services.messages import BAD_CHANNEL, EMPTY_MESSAGE, channel_validate
from memory.services.portability import (
    FACT_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    MESSAGE_FIELDS,
    NOTES_FIELDS,
    REVISION_FIELDS,
    SETTINGS_FIELDS,
    SUMMARY_FIELDS,
)
from memory.services.settings import memory_settings_update

LINE_ERROR = "ligne {line} : {message}"
EMPTY_FILE = "le fichier est vide (un en-tête makilab-memory est attendu)."
BAD_HEADER = f'en-tête attendu : {{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, …}}.'
BAD_VERSION = "version {version} non prise en charge (cette version lit la version {supported})."
BAD_JSON = "JSON invalide ({error})."
NOT_OBJECT = "un objet JSON est attendu."
UNKNOWN_TYPE = "type « {type} » inconnu (attendus : {types})."
MISSING_FIELD = "champ « {name} » manquant."
UNKNOWN_FIELDS = "champ(s) inconnu(s) : {names}."
BAD_TYPE = "champ « {name} » : {expected} attendu."
BAD_DATE = "champ « {name} » : date ISO 8601 attendue."
DUPLICATE_ID = "le message {id} apparaît deux fois dans le fichier."
DUPLICATE_KEY = "le fait « {key} » apparaît deux fois dans le fichier."
UNKNOWN_REF = "champ « {name} » : aucun message {id} sur une ligne précédente."
CONFLICT_VALUE = "fait « {key} » : une autre valeur existe ici, elle est gardée."
CONFLICT_FORGOTTEN = "fait « {key} » : oublié dans cette mémoire, il le reste."
FORGOTTEN_ROW = "{kind} du {date} : oublié dans cette mémoire, non réimporté."

STR, INT, FLOAT, BOOL, DATE, LIST, DICT = "str", "int", "float", "bool", "date", "list", "dict"
_EXPECTED = {
    STR: "un texte",
    INT: "un entier",
    FLOAT: "un nombre",
    BOOL: "true ou false",
    LIST: "une liste de textes",
    DICT: "un objet",
}
# type -> {field: (kind, nullable)}; every field is required (version 1 writes them all).
_SPECS: dict[str, dict[str, tuple[str, bool]]] = {
    "message": {
        "id": (INT, False),
        **dict.fromkeys(("channel", "role", "author", "source", "content"), (STR, False)),
        "created_at": (DATE, False),
        "compacted": (BOOL, False),
        "reply_to": (INT, True),
    },
    "summary": {
        "channel": (STR, False),
        "content": (STR, False),
        "message_count": (INT, False),
        "period_start": (DATE, True),
        "period_end": (DATE, True),
        "created_at": (DATE, False),
    },
    "fact": {
        **dict.fromkeys(("key", "value", "memory_type", "source", "channel"), (STR, False)),
        "importance": (FLOAT, False),
        "subjects": (LIST, False),
        "expires_at": (DATE, True),
        "created_at": (DATE, False),
        "updated_at": (DATE, False),
        "last_accessed_at": (DATE, True),
        "access_count": (INT, False),
        "owner_fields": (LIST, False),
        "source_message": (INT, True),
        "revisions": (None, False),
    },
    "revision": {
        **dict.fromkeys(("actor", "reason", "old_value", "new_value", "note"), (STR, False)),
        "changes": (DICT, False),
        "created_at": (DATE, False),
    },
    "context_notes": {"enabled": (BOOL, False), "notes": (LIST, False), "tag": (STR, False)},
}
assert set(_SPECS["message"]) == {*MESSAGE_FIELDS, "id", "reply_to"}
assert set(_SPECS["summary"]) == set(SUMMARY_FIELDS)
assert set(_SPECS["fact"]) == {*FACT_FIELDS, "source_message", "revisions"}
assert set(_SPECS["revision"]) == set(REVISION_FIELDS)
RECORD_TYPES = ("settings", "context_notes", "message", "summary", "fact")
BATCH = 500


class ImportLineError(MemoryServiceError):
    """A line of the file that cannot be imported; nothing was imported."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(LINE_ERROR.format(line=line, message=message))


@dataclass
class ImportReport:
    created: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    settings_changed: list[str] = field(default_factory=list)
    records: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        """Records read per second."""
        return self.records / self.seconds if self.seconds else 0.0

    def count(self, bucket: dict[str, int], kind: str) -> None:
        bucket[kind] = bucket.get(kind, 0) + 1


def _check(line: int, record: dict, spec: dict[str, tuple[str, bool]], where: str = "") -> dict:
    """The record's fields typed as the spec says (dates parsed), or a line error."""
    missing = [name for name in spec if name not in record]
    if missing:
        raise ImportLineError(line, where + MISSING_FIELD.format(name=missing[0]))
    unknown = sorted(set(record) - set(spec) - {"type"})
    if unknown:
        raise ImportLineError(line, where + UNKNOWN_FIELDS.format(names=", ".join(unknown)))
    values = {}
    for name, (kind, nullable) in spec.items():
        value = record[name]
        if kind is None or (value is None and nullable):
            values[name] = value
            continue
        if kind == DATE:
            parsed = parse_datetime(value) if isinstance(value, str) else None
            if parsed is None:
                raise ImportLineError(line, where + BAD_DATE.format(name=name))
            if timezone.is_naive(parsed):
                parsed = timezone.make_aware(parsed)
            values[name] = parsed
            continue
        ok = {
            STR: isinstance(value, str),
            INT: isinstance(value, int) and not isinstance(value, bool),
            FLOAT: isinstance(value, int | float) and not isinstance(value, bool),
            BOOL: isinstance(value, bool),
            LIST: isinstance(value, list) and all(isinstance(v, str) for v in value),
            DICT: isinstance(value, dict),
        }[kind]
        if not ok:
            raise ImportLineError(
                line, where + BAD_TYPE.format(name=name, expected=_EXPECTED[kind])
            )
        values[name] = value
    return values


def _clean(line: int, instance, exclude: list[str], where: str = "") -> None:
    """The model's own validation (choices, lengths, ranges, the key rule), as a line error."""
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        parts = [
            f"champ « {name} » : {' '.join(messages)}"
            for name, messages in exc.message_dict.items()
        ]
        raise ImportLineError(line, where + " ; ".join(parts)) from None


class _Importer:
    def __init__(self) -> None:
        self.report = ImportReport()
        self.message_ids: dict[int, int] = {}  # file id -> row id
        self.fact_keys: set[str] = set()
        self.new: dict[str, list[int]] = {KIND_MESSAGE: [], KIND_SUMMARY: [], KIND_FACT: []}

    def header(self, line: int, record: object) -> None:
        if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
            raise ImportLineError(line, BAD_HEADER)
        if record.get("version") != FORMAT_VERSION:
            raise ImportLineError(
                line,
                BAD_VERSION.format(version=record.get("version"), supported=FORMAT_VERSION),
            )

    def record(self, line: int, record: object) -> None:
        if not isinstance(record, dict):
            raise ImportLineError(line, NOT_OBJECT)
        kind = record.get("type")
        if kind not in RECORD_TYPES:
            if kind is None:
                raise ImportLineError(line, MISSING_FIELD.format(name="type"))
            raise ImportLineError(
                line, UNKNOWN_TYPE.format(type=kind, types=", ".join(RECORD_TYPES))
            )
        getattr(self, f"_{kind}")(line, record)
        self.report.records += 1

    def _settings(self, line: int, record: dict) -> None:
        values = {k: v for k, v in record.items() if k != "type"}
        unknown = sorted(set(values) - set(SETTINGS_FIELDS))
        if unknown:
            raise ImportLineError(line, UNKNOWN_FIELDS.format(names=", ".join(unknown)))
        self._settings_apply(line, values)

    def _context_notes(self, line: int, record: dict) -> None:
        values = _check(line, record, _SPECS["context_notes"])
        self._settings_apply(line, {name: values[short] for name, short in NOTES_FIELDS.items()})

    def _settings_apply(self, line: int, values: dict) -> None:
        current = MemorySettings.load()
        changes = {k: v for k, v in values.items() if getattr(current, k) != v}
        if not changes:
            return
        try:
            memory_settings_update(changes=changes)
        except ValidationError as exc:
            parts = [f"« {n} » : {' '.join(m)}" for n, m in exc.message_dict.items()]
            raise ImportLineError(line, "réglages invalides, " + " ; ".join(parts)) from None
        except MemoryServiceError as exc:
            raise ImportLineError(line, str(exc)) from None
        self.report.settings_changed.extend(sorted(changes))

    def _message(self, line: int, record: dict) -> None:
        values = _check(line, record, _SPECS["message"])
        file_id, reply_to = values.pop("id"), values.pop("reply_to")
        if file_id in self.message_ids:
            raise ImportLineError(line, DUPLICATE_ID.format(id=file_id))
        if reply_to is not None and reply_to not in self.message_ids:
            raise ImportLineError(line, UNKNOWN_REF.format(name="reply_to", id=reply_to))
        try:
            values["channel"] = channel_validate(values["channel"])
        except ValidationError:
            raise ImportLineError(line, f"champ « channel » : {BAD_CHANNEL}") from None
        if not values["content"].strip():
            raise ImportLineError(line, f"champ « content » : {EMPTY_MESSAGE}")
        key = {k: values[k] for k in MESSAGE_FIELDS if k != "compacted"}
        existing = Message.all_objects.filter(**key).values_list("id", "forgetting_id").first()
        if existing is not None:
            self.message_ids[file_id] = existing[0]
            self._kept("message", existing[1] is not None, values["created_at"])
            return
        message = Message(**values, reply_to_id=self.message_ids.get(reply_to))
        _clean(line, message, exclude=["reply_to", "forgetting"])
        message.save(force_insert=True)
        self.message_ids[file_id] = message.id
        self.new[KIND_MESSAGE].append(message.id)
        self.report.count(self.report.created, "message")

    def _summary(self, line: int, record: dict) -> None:
        values = _check(line, record, _SPECS["summary"])
        key = {k: values[k] for k in ("channel", "created_at", "content")}
        existing = Summary.all_objects.filter(**key).values_list("id", "forgetting_id").first()
        if existing is not None:
            self._kept("summary", existing[1] is not None, values["created_at"])
            return
        summary = Summary(**values)
        _clean(line, summary, exclude=["forgetting"])
        summary.save(force_insert=True)
        self.new[KIND_SUMMARY].append(summary.id)
        self.report.count(self.report.created, "summary")

    def _kept(self, kind: str, forgotten: bool, date: datetime) -> None:
        if forgotten:
            label = {"message": "message", "summary": "résumé"}[kind]
            self.report.conflicts.append(
                FORGOTTEN_ROW.format(kind=label, date=date.isoformat(timespec="seconds"))
            )
        self.report.count(self.report.unchanged, kind)

    def _fact(self, line: int, record: dict) -> None:
        values = _check(line, record, _SPECS["fact"])
        revisions = values.pop("revisions")
        source_message = values.pop("source_message")
        if not isinstance(revisions, list):
            raise ImportLineError(line, BAD_TYPE.format(name="revisions", expected="une liste"))
        rows = []
        for number, revision in enumerate(revisions, start=1):
            where = f"révision {number}, "
            if not isinstance(revision, dict):
                raise ImportLineError(line, where + NOT_OBJECT)
            rows.append(_check(line, revision, _SPECS["revision"], where))
        if source_message is not None and source_message not in self.message_ids:
            raise ImportLineError(
                line, UNKNOWN_REF.format(name="source_message", id=source_message)
            )
        key = values["key"]
        if key in self.fact_keys:
            raise ImportLineError(line, DUPLICATE_KEY.format(key=key))
        self.fact_keys.add(key)
        fact = Fact(**values, source_message_id=self.message_ids.get(source_message))
        _clean(line, fact, exclude=["source_message", "forgetting"])
        revisions = [FactRevision(fact=fact, **row) for row in rows]
        for number, revision in enumerate(revisions, start=1):
            _clean(line, revision, exclude=["fact"], where=f"révision {number}, ")
        existing = Fact.all_objects.filter(key=key).values_list("value", "forgotten").first()
        if existing is not None:
            if existing[1]:
                self.report.conflicts.append(CONFLICT_FORGOTTEN.format(key=key))
            elif existing[0] != values["value"]:
                self.report.conflicts.append(CONFLICT_VALUE.format(key=key))
            self.report.count(self.report.unchanged, "fact")
            return
        fact.save(force_insert=True)
        # updated_at is auto_now: the fact's date (what retrieval reads) is the file's.
        Fact.all_objects.filter(pk=fact.pk).update(updated_at=values["updated_at"])
        FactRevision.objects.bulk_create(revisions)
        self.new[KIND_FACT].append(fact.id)
        self.report.count(self.report.created, "fact")
        self.report.created["revision"] = self.report.created.get("revision", 0) + len(revisions)

    def finish(self) -> None:
        """New rows wait for the indexer (pending, a task sent on commit)."""
        for kind, ids in self.new.items():
            for start in range(0, len(ids), BATCH):
                rows_changed(kind, ids[start : start + BATCH])


NOT_UTF8 = "le texte n'est pas en UTF-8."


def memory_import_lines(lines: Iterable[str | bytes]) -> ImportReport:
    """Import the lines of an export; all or nothing (see the module docstring)."""
    started = time.perf_counter()
    importer = _Importer()
    header_seen = False
    with transaction.atomic():
        for number, raw in enumerate(lines, start=1):
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ImportLineError(number, NOT_UTF8) from None
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError as exc:
                raise ImportLineError(number, BAD_JSON.format(error=exc)) from None
            if not header_seen:
                importer.header(number, record)
                header_seen = True
            else:
                importer.record(number, record)
        if not header_seen:
            raise ImportLineError(1, EMPTY_FILE)
        importer.finish()
    importer.report.seconds = time.perf_counter() - started
    return importer.report


def memory_import(*, path) -> ImportReport:
    """Import the export file at ``path`` (UTF-8 JSONL)."""
    with open(path, "rb") as handle:
        return memory_import_lines(handle)
