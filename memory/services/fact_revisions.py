"""A fact's revisions: who changed what, recorded by every write of a fact
(memory.services.facts, memory.services.expiry).

A revision keeps the old and new value and, in ``changes``, every tracked field that
differs (``{"field": [old, new]}``); a forget or an expiry records the one thing it changes.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from memory.exceptions import FactChanged, FactNotFound
from memory.models import Fact, FactRevision, RevisionReason
from memory.services.fact_ownership import OWNER_ACTORS

# Fields a revision records as {"field": [old, new]} (the value also has old_value/new_value).
TRACKED_FIELDS = (
    "key",  # an owner's rename (a creation records its key as the fact's own, not a change)
    "value",
    "memory_type",
    "importance",
    "subjects",
    "expires_at",
    "channel",
    "source",
    "forgotten",
    "category",
)
# A forget or an expiry changes one thing; their callers do not pass a snapshot.
_IMPLIED_CHANGES = {
    RevisionReason.FORGOTTEN: {"forgotten": [False, True]},
    RevisionReason.EXPIRED: {"forgotten": [False, True]},
}


def fact_snapshot(fact: Fact) -> dict[str, object]:
    return {name: getattr(fact, name) for name in TRACKED_FIELDS}


# The "before" of a fact that did not exist: a creation records every field it sets.
NO_FACT = dict.fromkeys(TRACKED_FIELDS) | {"forgotten": False}


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
    """Record who changed what: ``changes`` holds every tracked field that differs from ``before``."""
    after = fact_snapshot(fact)
    if before is None:
        changes = dict(_IMPLIED_CHANGES.get(reason, {}))
    else:
        changes = {
            name: [_jsonable(before[name]), _jsonable(after[name])]
            for name in TRACKED_FIELDS
            if before[name] != after[name]
            and not (before[name] is None and (after[name] in ("", []) or name == "key"))
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


def owner_changes_since(name: str, *, message_id: int) -> QuerySet[FactRevision]:
    """The owner's revisions that changed the field ``name`` after the message ``message_id``
    was written (a message gone counts as before: all of them), newest first. A statement
    drawn from that message is older than those changes: it must not undo them (the
    renamed key, fact_keys.renamed_since; the replaced value, dedup.fact_remember). Read
    internally only (never shown): lines a topic forget took count too."""
    from memory.selectors import message_written_at

    written = message_written_at(message_id)
    # Every line, those a topic forget took too: the owner's change stands all the same.
    lines = FactRevision.all_objects.filter(actor__in=OWNER_ACTORS, changes__has_key=name)
    if written is not None:
        lines = lines.filter(created_at__gt=written)
    return lines.order_by("-created_at", "-id")


def fact_version(fact) -> str:
    """What tells a fact as an edit read it from the same fact changed since (its last
    write's moment): fact_update's ``opened``."""
    return fact.updated_at.isoformat() if fact.updated_at else ""


def fact_version_readable(version: str) -> bool:
    """Whether ``version`` is of the form fact_version returns (the fact's last write,
    ISO 8601 with its offset): a caller says an unreadable one as such, not as a change
    made since (QA: « garbage », « 2026-02-30… » were answered « Ce fait a changé »)."""
    from django.utils.dateparse import parse_datetime

    try:
        moment = parse_datetime(version)
    except ValueError:  # the right form, no such moment
        return False
    return moment is not None and moment.tzinfo is not None


FACT_CHANGED_MESSAGE = (
    "Ce fait a changé depuis que vous l'avez ouvert (un autre onglet, l'agent ou "
    "l'administration) ; sa valeur est maintenant « {value} ». Rien n'a été enregistré : "
    "vérifiez vos modifications, puis enregistrez-les à nouveau."
)
# The same refusal of a forget (DELETE /facts/<key> with a stale If-Match): nothing to redo.
FACT_CHANGED_FORGET_MESSAGE = (
    "Ce fait a changé depuis que vous l'avez lu (l'agent, un autre client ou "
    "l'administration) ; sa valeur est maintenant « {value} ». Il n'a pas été oublié : "
    "relisez-le, puis oubliez-le à nouveau si c'est toujours ce que vous voulez."
)
# An owner's form opened on the fact live, saved after a forget: saving again restores it.
FACT_FORGOTTEN_SINCE_MESSAGE = (
    "Ce fait a été oublié depuis que vous l'avez ouvert (un autre onglet, l'agent ou "
    "l'administration) : rien n'a été enregistré. Enregistrez à nouveau pour le restaurer "
    "avec vos modifications."
)


# No topic: the agent's token may be the one told (a forgotten topic is forgotten content).
FACT_TAKEN_MEANWHILE_MESSAGE = (
    "Ce fait a été oublié entre-temps (oubli n° {id}) : rien n'a été fait. "
    "Pour le retrouver, annulez cet oubli depuis la page Mémoire."
)


def fact_changed_refuse(current: Fact, opened: str | None, *, forget: bool = False) -> None:
    """Raise FactChanged, with the value stored now, when ``current`` (the row the caller
    locked) is no longer the version ``opened`` the caller read (None: no check).
    ``forget``: said of a forget (fact_forget), else of an edit (fact_update's message).
    A topic forget that took the fact meanwhile leaves its version as it was: said too
    (QA: the owner's edit was written onto the forgotten row, answered 200)."""
    if opened is not None and current.forgetting_id is not None:
        raise FactChanged(FACT_TAKEN_MEANWHILE_MESSAGE.format(id=current.forgetting_id))
    if opened is not None and fact_version(current) != opened:
        message = FACT_CHANGED_FORGET_MESSAGE if forget else FACT_CHANGED_MESSAGE
        raise FactChanged(message.format(value=current.value))


def fact_locked(fact: Fact) -> Fact:
    """``fact``'s row as it is now, locked for this transaction; FactNotFound (a French
    404) when it was erased since the caller found it (QA: Fact.DoesNotExist, a 500)."""
    from memory.selectors import FACT_NOT_FOUND_MESSAGE

    try:
        return Fact.all_objects.select_for_update().get(pk=fact.pk)
    except Fact.DoesNotExist:
        raise FactNotFound(FACT_NOT_FOUND_MESSAGE.format(key=fact.key)) from None
