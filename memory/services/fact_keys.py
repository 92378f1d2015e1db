"""Which fact a key names: the agent's key folds onto the fact that looks like it, the
owner's is read as typed, and the owner's new key that only looks like a live fact's is
refused (memory.services.facts writes by these rules)."""

from __future__ import annotations

from memory.exceptions import FactKeyLookAlike, FactNotFound
from memory.models import (
    FACT_ASIDE_KEY_PATTERN,
    Actor,
    Fact,
    FactKind,
    fact_key_composed,
    fact_key_folded,
)

KEY_LOOK_ALIKE_MESSAGE = (
    "La clé « {key} » ressemble trop à celle du fait « {other} » (seule l'écriture "
    "diffère : majuscules, accents, espaces ou séparateurs) : modifiez ce fait, ou "
    "choisissez une clé bien distincte."
)


def key_as_stored(key: str, actor: str) -> str:
    """The key a statement is about (fact_store, dedup.fact_remember): composed (NFC: an
    accent typed apart looks exactly alike), or a key stored as typed before; and the
    agent's key that looks like a stored fact's is that fact's ("User_Job", "user job" or
    "ecole_x" is the owner's "user_job" or "école_x": it started a second fact beside
    it, both in the prompt), so everything after (the owner's lock, a forget's set-aside
    and undo) goes as for the exact key. Not a key a forget set aside. The exact key is
    one indexed lookup; another spelling, a scan of the keys folded in the database
    (fact_key_folded, registered there as makilab_key_folded)."""
    typed = key.strip()
    key = fact_key_composed(typed)
    exact = set(Fact.all_objects.filter(key__in={key, typed}).values_list("key", flat=True))
    for spelling in (key, typed):
        if spelling in exact:
            return spelling
    if actor != Actor.AGENT:
        return key
    alike = _keys_alike(key, Fact.all_objects)
    return next((k for k in alike if not FACT_ASIDE_KEY_PATTERN.search(k)), key)


def _keys_alike(key: str, facts) -> list[str]:
    """The keys of ``facts`` that look like ``key`` (fact_key_folded, registered in the
    database as makilab_key_folded), oldest first."""
    folded = facts.extra(where=['makilab_key_folded("key") = %s'], params=[fact_key_folded(key)])
    return list(folded.order_by("id").values_list("key", flat=True))


def live_look_alike(key: str, *, but: int | None = None, kind: str = FactKind.OWNER) -> str | None:
    """The key of the oldest live fact of ``kind`` that looks like ``key`` without being it
    (a forgotten fact or one set aside is no live fact); ``but``: a fact left out."""
    live = Fact.all_objects.filter(forgetting__isnull=True, kind=kind, forgotten=False)
    live = live.exclude(key=key)
    if but is not None:
        live = live.exclude(pk=but)
    return next((k for k in _keys_alike(key, live) if not FACT_ASIDE_KEY_PATTERN.search(k)), None)


def key_look_alike_refuse(key: str, *, but: int | None = None) -> None:
    """Refuse the owner's new key (or a rename) that only looks like a live fact's key:
    « Courses » beside « courses » started a second fact, both in the prompt, and the
    agent's next statement folded onto one of them. The agent's own statements land on
    that fact (key_as_stored); a forgotten look-alike is no live fact. Raises
    FactKeyLookAlike naming the fact; ``but``: the fact being renamed."""
    other = live_look_alike(key, but=but)
    if other is not None:
        raise FactKeyLookAlike(KEY_LOOK_ALIKE_MESSAGE.format(key=key, other=other))


def fact_named(key: str, actor: str, *, any_kind: bool = False) -> Fact:
    """The fact ``key`` names for ``actor`` (a read, an edit, a forget by key): to the agent,
    the fact its statement of that key would write (key_as_stored: « ecole_x » is the
    owner's « école_x »; beside a forgotten fact, the live one that looks like it), and a
    forgotten fact is a key never stored; the owner reads a
    key as typed (or composed). Raises FactNotFound. ``any_kind``: also the agent's self
    and goal items."""
    from memory.selectors import FACT_NOT_FOUND_MESSAGE, fact_get

    agent = actor == Actor.AGENT
    fact = fact_get(key=key_as_stored(key, actor) if agent else key, any_kind=any_kind)
    if agent and fact.forgotten:
        # The live fact that looks like it is the one the agent's statement would land on
        # (memory.services.facts.fact_store): a 404 here told a forgotten one was there.
        alike = live_look_alike(fact.key, kind=fact.kind)
        if alike is None:
            raise FactNotFound(FACT_NOT_FOUND_MESSAGE.format(key=key))
        fact = fact_get(key=alike, any_kind=any_kind)
    return fact


def renamed_since(key: str, *, kind: str, message_id: int) -> int | None:
    """The fact the owner renamed from a key that looks like ``key`` after the message
    ``message_id`` was written (a message gone counts as before): a statement drawn from
    that message is about that fact, under the key the owner gave it (QA: a late
    extraction brought « ville » back beside the owner's « ville_natale »), forgotten since
    too (QA 3: its forget must stand, fact_store). A statement of a later message is news:
    a fact of its own (dedup compares it with the rest)."""
    from memory.services.fact_revisions import owner_changes_since

    lines = owner_changes_since("key", message_id=message_id).filter(fact__kind=kind)
    folded = fact_key_folded(key)
    for fact_id, changes in lines.values_list("fact_id", "changes"):
        old = (changes.get("key") or [None])[0]
        if isinstance(old, str) and fact_key_folded(old) == folded:
            return fact_id
    return None
