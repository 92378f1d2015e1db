"""The records of a memory import, one by one: each matched on its stable key, new rows
written by batches (memory.services.portability_import reads the file and states the rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.core.exceptions import ValidationError

from memory.exceptions import MemoryServiceError
from memory.models import (
    FACT_ASIDE_KEY_PATTERN,
    Fact,
    FactRevision,
    MemorySettings,
    fact_key_composed,
    fact_key_folded,
    validate_fact_key_shape,
)
from memory.models.rules import BAD_CHANNEL, fact_key_reserved, invisible_in, text_folded
from memory.services.erased_marks import (
    fact_alike,
    fact_marks,
    forgotten_alike,
)
from memory.services.fact_ownership import OWNED_FIELDS, OWNER_ACTORS
from memory.services.forgetting_restated import key_unaside
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, rows_changed
from memory.services.messages_record import FUTURE_TOLERANCE
from memory.services.portability import NOTES_FIELDS, SETTINGS_FIELDS
from memory.services.portability_import_messages import BATCH, MessageRecords
from memory.services.portability_legacy import fact_repaired, revision_changes_repaired
from memory.services.portability_validate import (
    BAD_TYPE,
    DUPLICATE_CHANNEL,
    DUPLICATE_KEY,
    DUPLICATE_SETTINGS,
    FACT_AGENT_SPEC,
    MISSING_FIELD,
    NOT_OBJECT,
    RECORD_TYPES,
    REVISION_BEFORE_FACT,
    SPECS,
    UNKNOWN_FIELDS,
    UNKNOWN_REF,
    UNKNOWN_TYPE,
    ImportLineError,
    dates_check,
    model_check,
    record_check,
    settings_check,
)
from memory.services.settings import memory_settings_update

UNKNOWN_OWNER_FIELD = (
    "champ « owner_fields » : « {name} » n'est pas un champ qu'un propriétaire tient "
    "(attendus : {names})."
)

__all__ = [
    "CONFLICT_ERASED",
    "CONFLICT_FORGOTTEN",
    "CONFLICT_RENAMED",
    "CONFLICT_VALUE",
    "ImportReport",
    "Importer",
]

CONFLICT_VALUE = "fait « {key} » : une autre valeur existe ici, elle est gardée."
CONFLICT_FORGOTTEN = "fait « {key} » : oublié dans cette mémoire, il le reste."
CONFLICT_ERASED = "fait « {key} » : effacé de cette mémoire, non réimporté."
CONFLICT_RENAMED = (
    "fait « {key} » : renommé « {new} » dans cette mémoire, il le reste ; non importé."
)
CONFLICT_LOOK_ALIKE = (
    "fait « {key} » : sa clé ressemble trop à celle du fait « {other} » d'ici, qui est gardé ; "
    "non importé."
)


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

    def count(self, bucket: dict[str, int], kind: str, n: int = 1) -> None:
        bucket[kind] = bucket.get(kind, 0) + n


class Importer(MessageRecords):
    """One pass over the records; rows to create wait in batches, flushed in file order."""

    def __init__(self) -> None:
        super().__init__()
        self.report = ImportReport()
        self.fact_keys: set[str] = set()
        self.new: dict[str, list[int]] = {KIND_MESSAGE: [], KIND_SUMMARY: [], KIND_FACT: []}
        # What this memory holds, read once: the matching keys of facts.
        self._facts: dict[str, tuple[str, bool]] | None = None
        # The forgotten fact texts, as they look (erased_marks.forgotten_alike): read once.
        self._forgotten_alike: set[tuple[str, str]] | None = None
        self._live_alike: set[tuple[str, str]] = set()  # the live facts, read with _facts
        self._live_keys_alike: dict[str, str] = {}  # their folded keys -> their keys
        # The keys a fact here was renamed from -> (its key now, hidden), read with _facts.
        self._renamed: dict[str, tuple[str, bool]] = {}
        # The folded keys of the file's new facts -> their keys (a key as typed today only).
        self._file_keys_alike: dict[str, str] = {}
        self._fact_batch: list[tuple[Fact, datetime, list[FactRevision]]] = []
        # The line of each setting the file gave ("settings", "context_notes", a channel's
        # name): a file no export writes gives one twice, refused, not applied twice (QA).
        self._settings_lines: dict[str, int] = {}

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

    # --- settings -------------------------------------------------------------------------

    def _setting_once(self, line: int, name: str, refusal: str, **said: object) -> None:
        first = self._settings_lines.setdefault(name, line)
        if first != line:
            raise ImportLineError(line, refusal.format(first=first, **said))

    def _settings(self, line: int, record: dict) -> None:
        self._setting_once(line, "settings", DUPLICATE_SETTINGS, type="settings")
        values = {k: v for k, v in record.items() if k != "type"}
        unknown = sorted(set(values) - set(SETTINGS_FIELDS))
        if unknown:
            raise ImportLineError(line, UNKNOWN_FIELDS.format(names=", ".join(unknown)))
        settings_check(line, values)
        self._settings_apply(line, values)

    def _context_notes(self, line: int, record: dict) -> None:
        values = record_check(line, record, SPECS["context_notes"])
        self._setting_once(line, "context_notes", DUPLICATE_SETTINGS, type="context_notes")
        self._settings_apply(line, {name: values[short] for name, short in NOTES_FIELDS.items()})

    def _channel(self, line: int, record: dict) -> None:
        """A channel's settings, applied as the file has them (as a settings line is)."""
        from memory.services.channels import channel_settings_get, channel_settings_set

        values = record_check(line, record, SPECS["channel"])
        channel = values["channel"]
        self._setting_once(line, f"channel:{channel}", DUPLICATE_CHANNEL, channel=channel)
        try:
            if channel_settings_get(channel=values["channel"]).observed == values["observed"]:
                return
            channel_settings_set(channel=values["channel"], observed=values["observed"])
        except ValidationError:
            raise ImportLineError(line, f"champ « channel » : {BAD_CHANNEL}") from None
        said = "observé" if values["observed"] else "non observé"
        self.report.settings_changed.append(f"canal « {values['channel']} » {said}")

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

    # --- facts ----------------------------------------------------------------------------

    def _existing_facts(self) -> dict[str, tuple[str, bool]]:
        if self._facts is None:
            rows = Fact.all_objects.values_list("id", "key", "value", "forgotten", "forgetting_id")
            self._facts, aside, by_id = {}, {}, {}
            for fact_id, key, value, forgotten, forgetting_id in rows.iterator():
                hidden = forgotten or forgetting_id is not None
                self._facts[key] = (value, forgotten)
                by_id[fact_id] = (key, hidden)
                if not hidden:
                    self._live_alike.add(fact_alike(key, value))
                    self._live_keys_alike.setdefault(fact_key_folded(key), key)
                if hidden and FACT_ASIDE_KEY_PATTERN.search(key):
                    # Forgotten, and set aside when its key was stated again: under its own
                    # key, an older export's fact is the one forgotten here (the newer one
                    # holding that key may have been erased since).
                    aside[key_unaside(key)] = (value, True)
            for key, held in aside.items():
                self._facts.setdefault(key, held)
            self._renamed = _renamed_keys(by_id)
        return self._facts

    def _fact(self, line: int, record: dict) -> None:
        agent = {k: record[k] for k in FACT_AGENT_SPEC if k in record}
        record = {k: v for k, v in record.items() if k not in FACT_AGENT_SPEC}
        values = record_check(line, record, SPECS["fact"])
        values.update(
            record_check(line, agent, {k: FACT_AGENT_SPEC[k] for k in agent}) if agent else {}
        )
        revisions = values.pop("revisions")
        source_message = values.pop("source_message")
        if not isinstance(revisions, list):
            raise ImportLineError(line, BAD_TYPE.format(name="revisions", expected="une liste"))
        unknown = [name for name in values["owner_fields"] if name not in OWNED_FIELDS]
        if unknown:  # QA: the page showed « bogus » among the fields the owner holds
            raise ImportLineError(
                line,
                UNKNOWN_OWNER_FIELD.format(name=unknown[0], names=", ".join(OWNED_FIELDS)),
            )
        dates_check(line, values, past=("created_at", "updated_at", "last_accessed_at"))
        # Matched on the file's own text (this memory may hold the fact so), written repaired;
        # the repair is reported only for a fact the import writes (review).
        raw_value = values["value"]
        repaired = fact_repaired(values)
        rows = []
        for number, revision in enumerate(revisions, start=1):
            where = f"révision {number}, "
            if not isinstance(revision, dict):
                raise ImportLineError(line, where + NOT_OBJECT)
            rows.append(record_check(line, revision, SPECS["revision"], where))
            repaired += revision_changes_repaired(values["key"], number, rows[-1]["changes"])
            dates_check(line, rows[-1], past=("created_at",), where=where)
            if rows[-1]["created_at"] < values["created_at"] - FUTURE_TOLERANCE:
                raise ImportLineError(line, where + REVISION_BEFORE_FACT)
        if source_message is not None and source_message not in self.message_ids:
            raise ImportLineError(
                line, UNKNOWN_REF.format(name="source_message", id=source_message)
            )
        # An older export's key typed apart meets this memory's fact, stored composed since
        # migration 0027; else the file's spelling (0027 kept a twin whose composed key was
        # taken: its export holds both).
        typed = values["key"]
        composed = fact_key_composed(typed)
        facts = self._existing_facts()  # and self._renamed, read with them
        known = composed in facts or composed in self._renamed
        key = composed if composed != typed and known else typed
        values["key"] = key
        if key in self.fact_keys:
            raise ImportLineError(line, DUPLICATE_KEY.format(key=key))
        self.fact_keys.add(key)
        fact = Fact(**values)
        exclude = ["source_message", "forgetting"]
        # A key kept from before a rule (below) is no key the owner could type today: no
        # look-alike of the file's other keys.
        kept = fact_key_reserved(key) or invisible_in(key) is not None
        if kept:
            # A fact this memory restored beside the owner's newer one keeps the key a
            # forget set it aside under (memory.services.forgetting_restated), and a key
            # stored before invisible characters (or look-alikes of that key) were refused
            # keeps them: an export holds it and it comes back under it. Of the key rule,
            # its shape applies.
            exclude.append("key")
            try:
                validate_fact_key_shape(key)
            except ValidationError as exc:
                raise ImportLineError(line, f"champ « key » : {' '.join(exc.messages)}") from None
        model_check(line, fact, exclude=exclude)
        revisions = [FactRevision(**row) for row in rows]
        for number, revision in enumerate(revisions, start=1):
            model_check(line, revision, exclude=["fact"], where=f"révision {number}, ")
        existing = self._existing_facts().get(key)
        if existing is not None:
            value, forgotten = existing
            if forgotten:
                self.report.conflicts.append(CONFLICT_FORGOTTEN.format(key=key))
            elif value not in (raw_value, values["value"]):
                self.report.conflicts.append(CONFLICT_VALUE.format(key=key))
            self.report.count(self.report.unchanged, "fact")
            return
        renamed = self._renamed.get(key)
        if renamed is not None and _held_by(renamed[2], raw_value):
            # An export made before the owner renamed the fact: the same fact, which keeps
            # the owner's name (QA: the old key came back as a second fact beside it).
            new, hidden, _ = renamed
            conflict = CONFLICT_FORGOTTEN if hidden else CONFLICT_RENAMED
            self.report.conflicts.append(conflict.format(key=key, new=new))
            self.report.count(self.report.unchanged, "fact")
            return
        if self._forgotten_alike is None:
            self._forgotten_alike = forgotten_alike()
        alike = fact_alike(key, raw_value)
        if alike in self._live_alike:
            # A fact here, its key and text typed otherwise in the file: that fact.
            self.report.count(self.report.unchanged, "fact")
            return
        if alike in self._forgotten_alike:
            # Its key typed otherwise (an export edited by hand), its text forgotten here.
            self.report.conflicts.append(CONFLICT_FORGOTTEN.format(key=key))
            self.report.count(self.report.unchanged, "fact")
            return
        folded = fact_key_folded(key)  # an aside key as it is (alike[0] is without its suffix)
        other = self._live_keys_alike.get(folded)
        if other is None and not kept:
            other = self._file_keys_alike.get(folded)
            if other is not None and fact_key_composed(other) == composed:
                other = None  # its twin typed apart, which migration 0027 kept beside it
        if other is not None:
            # Another text under a key that only looks like a live fact's (« Courses » beside
            # « courses »): the owner's new keys are refused so (fact_keys), and so is this.
            self.report.conflicts.append(CONFLICT_LOOK_ALIKE.format(key=key, other=other))
            return
        marks = {
            m
            for k in {key, typed, composed}
            for text in {raw_value, values["value"]}
            for m in fact_marks(k, text)
        }
        if self._was_erased(*marks):
            self.report.conflicts.append(CONFLICT_ERASED.format(key=key))
            return
        fact.source_message_id = self._row_id(source_message)
        if not kept:
            # The file's next look-alike key meets this fact as one already here (« Courses »
            # after « courses » in one file started both, both in the prompt).
            self._file_keys_alike.setdefault(folded, key)
        self.report.conflicts.extend(repaired)
        self._fact_batch.append((fact, values["updated_at"], revisions))
        if len(self._fact_batch) >= BATCH:
            self._flush_facts()

    def _flush_facts(self) -> None:
        batch, self._fact_batch = self._fact_batch, []
        if not batch:
            return
        facts = Fact.all_objects.bulk_create([fact for fact, _, _ in batch])
        # updated_at is auto_now: the fact's date (what retrieval reads) is the file's.
        for fact, updated_at, _ in batch:
            fact.updated_at = updated_at
        Fact.all_objects.bulk_update(facts, ["updated_at"])
        revisions = []
        for fact, _, rows in batch:
            for revision in rows:
                revision.fact_id = fact.id
                revisions.append(revision)
        FactRevision.objects.bulk_create(revisions, batch_size=BATCH)
        self.new[KIND_FACT].extend(fact.id for fact in facts)
        self.report.count(self.report.created, "fact", len(facts))
        self.report.count(self.report.created, "revision", len(revisions))

    def finish(self) -> None:
        """Write what waits, then leave the new rows pending for the indexer: a task on
        commit, or serve's next sweep when this process's tasks reach no worker (the
        command beside serve on the in-process broker, whose queue dies with it)."""
        from makilab.runtime import tasks_reach_a_worker

        self._flush_messages()
        self._flush_facts()
        send = tasks_reach_a_worker()
        for kind, ids in self.new.items():
            for start in range(0, len(ids), BATCH):
                rows_changed(kind, ids[start : start + BATCH], send=send)


def _renamed_keys(facts: dict[int, tuple[str, bool]]) -> dict[str, tuple[str, bool, int]]:
    """The keys the owner renamed facts here from (a revision's ``key`` change: [old, new])
    -> the fact's key now, whether it is hidden, and its id (``facts``: id -> (key,
    hidden)); of a key two facts left, the latest rename's. A key held now is matched as
    held, not here."""
    renamed: dict[str, tuple[str, bool, int]] = {}
    lines = FactRevision.all_objects.filter(
        actor__in=OWNER_ACTORS, changes__has_key="key"
    ).order_by("-created_at", "-id")
    for fact_id, changes in lines.values_list("fact_id", "changes").iterator():
        old = (changes.get("key") or [None])[0]
        if isinstance(old, str) and fact_id in facts and old != facts[fact_id][0]:
            renamed.setdefault(old, (*facts[fact_id], fact_id))
    return renamed


def _held_by(fact_id: int, value: str) -> bool:
    """Whether the fact ``fact_id`` holds or held ``value`` (as it looks: text_folded): a line
    under a key the owner renamed since is that fact only then, not another memory's fact
    that happens to have had the same key (review)."""
    said = text_folded(value)
    held = set(Fact.all_objects.filter(pk=fact_id).values_list("value", flat=True))
    for old, new in FactRevision.all_objects.filter(fact_id=fact_id).values_list(
        "old_value", "new_value"
    ):
        held |= {old or "", new or ""}
    return any(text_folded(text) == said for text in held if text)
