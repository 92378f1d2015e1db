"""Writing facts: store, update, forget, restore. Every change leaves a FactRevision."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.models import (
    DEFAULT_IMPORTANCE,
    Actor,
    Fact,
    FactRevision,
    FactSource,
    MemoryType,
    RevisionReason,
)
from memory.services.indexing import KIND_FACT, index_enqueue
from memory.services.ttl import parse_ttl

logger = logging.getLogger(__name__)

# Fields a revision records besides the value.
TRACKED_FIELDS = ("memory_type", "importance", "subjects", "expires_at", "channel", "source")


def default_importance(memory_type: str) -> float:
    """The importance of a fact of this type when nobody gave one."""
    return DEFAULT_IMPORTANCE[MemoryType(memory_type)]


def normalize_subjects(subjects: Iterable[str] | None) -> list[str]:
    """Flat lower-case tags, without blanks or repeats, order kept."""
    seen: dict[str, None] = {}
    for subject in subjects or ():
        tag = str(subject).strip().lower()
        if tag:
            seen.setdefault(tag, None)
    return list(seen)


def _snapshot(fact: Fact) -> dict[str, object]:
    return {name: getattr(fact, name) for name in TRACKED_FIELDS}


def _jsonable(value: object) -> object:
    return value.isoformat() if isinstance(value, datetime) else value


def revision_record(
    *,
    fact: Fact,
    actor: str,
    reason: str,
    old_value: str,
    before: dict | None = None,
    note: str = "",
) -> FactRevision:
    after = _snapshot(fact)
    changes = {
        name: [_jsonable(before[name]), _jsonable(after[name])]
        for name in TRACKED_FIELDS
        if before is not None and before[name] != after[name]
    }
    return FactRevision.objects.create(
        fact=fact,
        actor=actor,
        reason=reason,
        old_value=old_value,
        new_value=fact.value,
        changes=changes,
        note=note,
    )


OWNER_ACTORS = (Actor.USER, Actor.ADMIN)
# Fields a write may state besides the value; None (not given) leaves them as they are.
STATED_FIELDS = ("memory_type", "importance", "subjects", "source", "channel", "expires_at")


def _stated(
    *,
    memory_type: str | None,
    importance: float | None,
    subjects: Iterable[str] | None,
    source: str | None,
    channel: str | None,
    ttl: str | None,
) -> dict[str, object]:
    """The fields a write states (ttl "" states "forever"; None states nothing)."""
    fields: dict[str, object] = {}
    if memory_type is not None:
        fields["memory_type"] = memory_type
    if importance is not None:
        fields["importance"] = importance
    if subjects is not None:
        fields["subjects"] = normalize_subjects(subjects)
    if source is not None:
        fields["source"] = source
    if channel is not None:
        fields["channel"] = channel
    if ttl is not None:
        fields["expires_at"] = parse_ttl(ttl)
    return fields


@transaction.atomic
def fact_store(
    *,
    key: str,
    value: str,
    memory_type: str | None = None,
    importance: float | None = None,
    subjects: Iterable[str] | None = None,
    source: str | None = None,
    channel: str | None = None,
    ttl: str | None = None,
    source_message_id: int | None = None,
    actor: str = Actor.USER,
) -> tuple[Fact, bool]:
    """Create the fact ``key``, or restate it when the key exists. Returns (fact, created).

    A restatement changes only what it states: an argument left None keeps the
    stored field (defaults apply to a new fact only), an unchanged restatement
    writes nothing (no revision, no re-embedding), and the agent never
    overwrites what the owner set (see fact_update). A fact forgotten by the
    owner and stated again comes back, with its history; a fact taken by a topic
    forget comes back as a new fact, without the forgotten history.
    """
    key = key.strip()
    stated = _stated(
        memory_type=memory_type,
        importance=importance,
        subjects=subjects,
        source=source,
        channel=channel,
        ttl=ttl,
    )
    existing = Fact.all_objects.select_for_update().filter(key=key).first()
    if existing is not None and existing.forgetting_id is not None:
        # Its history names what the owner asked to forget: start afresh.
        existing.revisions.all().delete()
        existing.delete()
        existing = None
    if existing is None:
        kind = stated.get("memory_type", MemoryType.FACT)
        fact = Fact(
            key=key,
            value=value.strip(),
            memory_type=kind,
            importance=stated.get("importance", default_importance(kind)),
            subjects=stated.get("subjects", []),
            source=stated.get("source", FactSource.MANUAL),
            channel=stated.get("channel", ""),
            expires_at=stated.get("expires_at"),
            source_message_id=source_message_id,
            owner_fields=_owned([], actor, ["value", *stated]),
        )
        fact.full_clean()
        fact.save()
        reason = RevisionReason.EXTRACTED if actor == Actor.AGENT else RevisionReason.CREATED
        revision_record(fact=fact, actor=actor, reason=reason, old_value="")
        index_enqueue(KIND_FACT, fact.id)
        return fact, True
    if actor == Actor.AGENT:
        # A restatement does not move the fact to another channel or source.
        stated.pop("channel", None)
        stated.pop("source", None)
    fact = fact_update(
        fact=existing,
        actor=actor,
        reason=RevisionReason.EXTRACTED if actor == Actor.AGENT else RevisionReason.EDITED,
        restatement=True,
        value=value.strip(),
        source_message_id=source_message_id,
        **stated,
    )
    return fact, False


def _owned(owned: list[str], actor: str, names: Iterable[str]) -> list[str]:
    """The owner's fields after ``actor`` set ``names`` (the value is never locked)."""
    if actor not in OWNER_ACTORS:
        return list(owned)
    return sorted(set(owned) | {n for n in names if n in STATED_FIELDS})


@transaction.atomic
def fact_update(
    *,
    fact: Fact,
    actor: str,
    reason: str = RevisionReason.EDITED,
    note: str = "",
    revive: bool = True,
    restatement: bool = False,
    **fields,
) -> Fact:
    """Change some fields of a fact, on the row as it is NOW, and record what changed.

    The row is re-read inside the transaction: a caller may hold an instance read
    before a slow call (an LLM decision), and saving that whole instance would
    undo an edit or a forget made meanwhile. Only fields whose value differs are
    written; nothing differs: nothing is written (no revision, no re-embedding).
    A ``restatement`` by the agent (extraction, a merge: not an explicit edit)
    never overwrites what the owner set about the fact (``owner_fields``: its
    type, importance, subjects, expiry, channel, source; a new value is new
    information and is kept, the old one stays in the history) and adds its
    subjects to the stored ones. A forgotten fact is revived, unless ``revive``
    is False (a merge decided before the forget): then nothing changes.
    """
    current = Fact.all_objects.select_for_update().get(pk=fact.pk)
    if "ttl" in fields:
        fields["expires_at"] = parse_ttl(fields.pop("ttl") or None)
    if "subjects" in fields:
        fields["subjects"] = normalize_subjects(fields["subjects"])
    if actor == Actor.AGENT and restatement:
        # The value is new information; subjects are only ever added to.
        locked = set(current.owner_fields or []) - {"value", "subjects"}
        for name in list(fields):
            if name in locked:
                logger.info("agent write to %s.%s left: the owner set it", current.key, name)
                fields.pop(name)
        if "subjects" in fields:
            fields["subjects"] = normalize_subjects([*current.subjects, *fields["subjects"]])
    changes = {
        name: value
        for name, value in fields.items()
        if getattr(current, name if name != "source_message_id" else "source_message_id") != value
    }
    if current.forgotten and not revive:
        return current
    reviving = current.forgotten and current.forgetting_id is None
    meaningful = {n for n in changes if n != "source_message_id"}
    if not meaningful and not reviving:
        if "source_message_id" in changes:
            Fact.all_objects.filter(pk=current.pk).update(
                source_message_id=changes["source_message_id"]
            )
        return current
    before = _snapshot(current)
    old_value = current.value
    for name, value in changes.items():
        setattr(current, name, value)
    if reviving:
        current.forgotten = False
        current.forgotten_at = None
    current.owner_fields = _owned(current.owner_fields or [], actor, meaningful)
    current.full_clean(validate_unique=False)
    current.save()
    revision_record(
        fact=current, actor=actor, reason=reason, old_value=old_value, before=before, note=note
    )
    index_enqueue(KIND_FACT, current.id)
    fact.__dict__.update(
        {f.attname: getattr(current, f.attname) for f in Fact._meta.concrete_fields}
    )
    return current


@transaction.atomic
def fact_forget(*, fact: Fact, actor: str, note: str = "") -> Fact:
    """Soft-delete: the fact stays in T1 with its history and can be restored."""
    current = Fact.all_objects.select_for_update().get(pk=fact.pk)
    if current.forgotten:
        return current
    current.forgotten = True
    current.forgotten_at = timezone.now()
    current.save(update_fields=["forgotten", "forgotten_at", "updated_at"])
    revision_record(
        fact=current,
        actor=actor,
        reason=RevisionReason.FORGOTTEN,
        old_value=current.value,
        note=note,
    )
    # The indexing machine removes the point of a forgotten fact.
    index_enqueue(KIND_FACT, current.id)
    fact.forgotten, fact.forgotten_at = current.forgotten, current.forgotten_at
    return current


@transaction.atomic
def fact_restore(*, fact: Fact, actor: str, note: str = "") -> Fact:
    """Undo a forget. An expired fact comes back without its expiry (else the next
    purge would forget it again)."""
    current = Fact.all_objects.select_for_update().get(pk=fact.pk)
    expired = current.is_expired
    if not current.forgotten and not expired:
        return current
    before = _snapshot(current)
    current.forgotten = False
    current.forgotten_at = None
    if expired:
        current.expires_at = None
    current.save(update_fields=["forgotten", "forgotten_at", "expires_at", "updated_at"])
    revision_record(
        fact=current,
        actor=actor,
        reason=RevisionReason.RESTORED,
        old_value=current.value,
        before=before,
        note=note,
    )
    index_enqueue(KIND_FACT, current.id)
    fact.__dict__.update(
        {f.attname: getattr(current, f.attname) for f in Fact._meta.concrete_fields}
    )
    return current


def facts_accessed(fact_ids: Iterable[int]) -> int:
    """Count one access (injected by auto-retrieval, returned to the agent by a search).

    One UPDATE with F(): no read-modify-write race, no revision, no re-embedding
    (``updated_at`` and the version are untouched: an access is not a change).
    """
    from django.db.models import F

    ids = {int(i) for i in fact_ids}
    if not ids:
        return 0
    return Fact.objects.filter(pk__in=ids).update(
        access_count=F("access_count") + 1, last_accessed_at=timezone.now()
    )
