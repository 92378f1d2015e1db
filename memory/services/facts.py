"""Writing facts: store, update, forget, restore. Every change leaves a FactRevision."""

from __future__ import annotations

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
    IndexState,
    MemoryType,
    RevisionReason,
)
from memory.services.indexing import KIND_FACT, index_enqueue
from memory.services.ttl import parse_ttl

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


@transaction.atomic
def fact_store(
    *,
    key: str,
    value: str,
    memory_type: str = MemoryType.FACT,
    importance: float | None = None,
    subjects: Iterable[str] | None = None,
    source: str = FactSource.MANUAL,
    channel: str = "",
    ttl: str | None = None,
    source_message_id: int | None = None,
    actor: str = Actor.USER,
) -> tuple[Fact, bool]:
    """Create the fact ``key``, or update it when the key exists. Returns (fact, created).

    A fact that was forgotten and is stored again comes back, with its history.
    """
    key = key.strip()
    expires_at = parse_ttl(ttl)
    reason = RevisionReason.EXTRACTED if actor == Actor.AGENT else RevisionReason.CREATED
    fields = {
        "value": value.strip(),
        "memory_type": memory_type,
        "importance": default_importance(memory_type) if importance is None else importance,
        "subjects": normalize_subjects(subjects),
        "source": source,
        "channel": channel,
        "expires_at": expires_at,
    }
    existing = Fact.objects.select_for_update().filter(key=key).first()
    if existing is None:
        fact = Fact(key=key, source_message_id=source_message_id, **fields)
        fact.full_clean()
        fact.save()
        revision_record(fact=fact, actor=actor, reason=reason, old_value="")
        index_enqueue(KIND_FACT, fact.id)
        return fact, True
    if source_message_id is not None:
        existing.source_message_id = source_message_id
    fact = fact_update(fact=existing, actor=actor, reason=RevisionReason.EDITED, **fields)
    return fact, False


@transaction.atomic
def fact_update(
    *, fact: Fact, actor: str, reason: str = RevisionReason.EDITED, note: str = "", **fields
) -> Fact:
    """Change some fields of a fact and record what changed. A forgotten fact is revived."""
    before = _snapshot(fact)
    old_value = fact.value
    if "ttl" in fields:
        fields["expires_at"] = parse_ttl(fields.pop("ttl"))
    if "subjects" in fields:
        fields["subjects"] = normalize_subjects(fields["subjects"])
    for name, value in fields.items():
        setattr(fact, name, value)
    if fact.forgotten:
        fact.forgotten = False
        fact.forgotten_at = None
    fact.index_state = IndexState.PENDING
    fact.full_clean(validate_unique=False)
    fact.save()
    revision_record(
        fact=fact, actor=actor, reason=reason, old_value=old_value, before=before, note=note
    )
    index_enqueue(KIND_FACT, fact.id)
    return fact


@transaction.atomic
def fact_forget(*, fact: Fact, actor: str, note: str = "") -> Fact:
    """Soft-delete: the fact stays in T1 with its history and can be restored."""
    if fact.forgotten:
        return fact
    fact.forgotten = True
    fact.forgotten_at = timezone.now()
    fact.index_state = IndexState.PENDING
    fact.save(update_fields=["forgotten", "forgotten_at", "index_state", "updated_at"])
    revision_record(
        fact=fact, actor=actor, reason=RevisionReason.FORGOTTEN, old_value=fact.value, note=note
    )
    # The fact's task removes the point of a forgotten fact.
    index_enqueue(KIND_FACT, fact.id)
    return fact


@transaction.atomic
def fact_restore(*, fact: Fact, actor: str, note: str = "") -> Fact:
    """Undo a forget."""
    if not fact.forgotten:
        return fact
    fact.forgotten = False
    fact.forgotten_at = None
    fact.index_state = IndexState.PENDING
    fact.save(update_fields=["forgotten", "forgotten_at", "index_state", "updated_at"])
    revision_record(
        fact=fact, actor=actor, reason=RevisionReason.RESTORED, old_value=fact.value, note=note
    )
    index_enqueue(KIND_FACT, fact.id)
    return fact
