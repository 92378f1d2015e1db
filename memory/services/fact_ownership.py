"""Who owns which field of a fact: what the owner set, the agent's writes never change.

The owner's writes (user, admin) mark the fields they set (``Fact.owner_fields``); an
agent write leaves those as they are (and logs it), and only adds to the subjects,
never one the owner took off.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping

from memory.models import Actor, Fact, FactRevision, RevisionReason

logger = logging.getLogger("memory.services.facts")  # the facts' log: one place to read writes

OWNER_ACTORS = (Actor.USER, Actor.ADMIN)
# Fields a write may state; the owner's ones (``Fact.owner_fields``) the agent never overwrites.
STATED_FIELDS = (
    "value",
    "memory_type",
    "importance",
    "subjects",
    "source",
    "channel",
    "expires_at",
)
# ``category`` (the agent's self and goal items) changes with what the agent learns (a
# limitation superseded by a capability), unless the owner set it, or wrote the item's text.
OWNED_FIELDS = (*STATED_FIELDS, "category")
# The fields the owner makes theirs by stating them, changed or not. The edit forms re-send
# every field they show (a value re-sent unchanged is not the owner writing it: only a change
# makes it theirs) but the expiry only when one is asked for (a TTL typed, "sans
# expiration", the API's ttl given): "for good" said of a fact without expiry is the owner's
# word, which the agent's next TTL must not replace.
OWNED_WHEN_STATED = ("expires_at",)
# A fact the owner creates: its type and importance are the owner's too, defaults included
# (QA: the agent demoted an owner's identity fact from 1.0 to 0.2, while its answer said
# its write was not recorded; the revision credited the defaults to the owner already).
OWNED_AT_CREATION = ("value", "memory_type", "importance")
UPDATABLE_FIELDS = {*OWNED_FIELDS, "ttl", "key", "source_message_id"}


# What an agent's tool says when its value met one the owner set (owner_kept).
OWNER_KEPT_MESSAGE = (
    "Valeur fixée par le propriétaire, conservée : {key} = « {value} ». "
    "La vôtre n'a pas été enregistrée."
)
OWNER_KEPT_FIELDS_MESSAGE = (
    "Fixé par le propriétaire, conservé pour {key} : {fields}. "
    "Votre changement n'a pas été enregistré."
)


def owner_kept_answer(
    fact: Fact, stated_value: str | None, stated_fields: Mapping[str, object] | None = None
) -> dict[str, object]:
    """What an agent's write adds to its answer when what it stated met what the owner set
    ({"owner_kept": True, "message": …}): a different value (``stated_value``), or another
    importance or type (``stated_fields``, as ``kept_fields_stated`` picks them); else
    nothing. The owner's always stayed; the agent is told so instead of a bare 200."""
    owned = fact.owner_fields or []
    said = []
    if stated_value is not None and "value" in owned and stated_value.strip() != fact.value:
        said.append(OWNER_KEPT_MESSAGE.format(key=fact.key, value=fact.value))
    kept = [
        _FIELD_SAID[name](fact)
        for name, given in (stated_fields or {}).items()
        if name in _FIELD_SAID and name in owned and _differs(given, getattr(fact, name))
    ]
    if kept:
        said.append(OWNER_KEPT_FIELDS_MESSAGE.format(key=fact.key, fields=" ; ".join(kept)))
    return {"owner_kept": True, "message": " ".join(said)} if said else {}


def _differs(given: object, kept: object) -> bool:
    """A stated field against the owner's: numbers within float noise are the same."""
    if isinstance(given, int | float) and isinstance(kept, int | float):
        return not math.isclose(given, kept, abs_tol=1e-9)
    return given != kept


def kept_fields_stated(data: Mapping[str, object]) -> dict[str, object]:
    """The fields of a write owner_kept_answer compares, when the writer gave them."""
    return {name: data[name] for name in _FIELD_SAID if data.get(name) is not None}


def _importance_said(fact: Fact) -> str:
    from memory.models.rules import number_said

    return f"importance {number_said(fact.importance)}"


def _type_said(fact: Fact) -> str:
    from memory.models import MemoryType

    return f"type « {MemoryType(fact.memory_type).label} »"


# The fields besides the value an agent's write is told the owner kept, said in French.
_FIELD_SAID = {"importance": _importance_said, "memory_type": _type_said}


def normalize_subjects(subjects: Iterable[str] | None) -> list[str]:
    """Flat lower-case tags, without blanks (invisible ones too) or repeats, order kept."""
    from memory.models.rules import shows_nothing

    seen: dict[str, None] = {}
    for subject in subjects or ():
        tag = str(subject).strip().lower()
        if not shows_nothing(tag):
            seen.setdefault(tag, None)
    return list(seen)


def owned_after(
    owned: list[str], actor: str, names: Iterable[str], stated: Iterable[str] = ()
) -> list[str]:
    """The owner's fields after ``actor`` set ``names`` (changed them) and stated ``stated``
    (given them, changed or not: only OWNED_WHEN_STATED count then)."""
    if actor not in OWNER_ACTORS:
        return list(owned)
    names = {*names, *(n for n in stated if n in OWNED_WHEN_STATED)}
    return sorted(set(owned) | {n for n in names if n in OWNED_FIELDS})


def agent_fields(current: Fact, fields: dict[str, object]) -> dict[str, object]:
    """What an agent write may change: never a field the owner set; subjects only added to."""
    locked_all = set(current.owner_fields or [])
    locked = locked_all - {"subjects"}
    if "value" in locked:
        # A fact the owner wrote lives as long as the owner said (no expiry: for good),
        # and an item's text the owner wrote keeps the category the owner left it in.
        locked |= {"expires_at", "category"}
    allowed: dict[str, object] = {}
    for name, value in fields.items():
        if name in locked and getattr(current, name) != value:
            logger.info(
                "agent write to fact #%s's %s left as is: the owner set it", current.pk, name
            )
            continue
        allowed[name] = value
    if "subjects" in allowed:
        removed = subjects_the_owner_removed(current) if "subjects" in locked_all else set()
        added = [s for s in normalize_subjects(allowed["subjects"]) if s not in removed]
        allowed["subjects"] = normalize_subjects([*current.subjects, *added])
    return allowed


def subjects_the_owner_removed(fact: Fact) -> set[str]:
    """The subjects the owner took off the fact (and did not give back since): the agent's
    additions never put them back. Every line, those a topic forget took too (QA 3: the
    edit's line taken, the agent put the subject back); read internally, never shown."""
    removed: set[str] = set()
    changes = FactRevision.all_objects.filter(
        fact_id=fact.pk, actor__in=OWNER_ACTORS, changes__has_key="subjects"
    )
    for change in changes.order_by("created_at", "id").values_list("changes", flat=True):
        old, new = (set(side or []) for side in change["subjects"])
        removed = (removed | (old - new)) - new
    return removed


def forgotten_by(fact: Fact) -> str | None:
    """Who forgot ``fact`` last: its last "forgotten" revision's actor, or the system when
    its expiry ran out since (an "expired" revision): a fact the owner forgot, restored,
    and that expired later, was forgotten by its expiry, not by the owner."""
    last = (
        FactRevision.all_objects.filter(
            fact_id=fact.pk, reason__in=(RevisionReason.FORGOTTEN, RevisionReason.EXPIRED)
        )
        .order_by("-id")
        .values_list("reason", "actor")
        .first()
    )
    if last is None:
        return None
    reason, actor = last
    return Actor.SYSTEM if reason == RevisionReason.EXPIRED else actor


def owner_forgot(fact: Fact) -> bool:
    """Whether ``fact`` is forgotten one by one and its last forget was the owner's (not
    its expiry: see forgotten_by)."""
    if not fact.forgotten or fact.forgetting_id is not None:
        return False
    return forgotten_by(fact) in OWNER_ACTORS


def revival_refused(fact: Fact, actor: str) -> bool:
    """Whether ``actor``'s write must leave the forgotten ``fact`` as it is: undoing a forget
    is the owner's alone. The agent never brings back what the owner forgot, nor writes to
    a fact a topic forget holds (its undo gives it back); it may bring back what it forgot
    itself or what expired (its restatement, see memory.services.facts.fact_store)."""
    if not fact.forgotten or actor != Actor.AGENT:
        return False
    return fact.forgetting_id is not None or owner_forgot(fact)
