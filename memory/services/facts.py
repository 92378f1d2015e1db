"""Writing facts: store, update, forget, restore. Every change leaves a FactRevision."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import (
    DEFAULT_IMPORTANCE,
    FACT_ASIDE_KEY_PATTERN,
    Actor,
    Fact,
    FactKind,
    FactSource,
    MemoryType,
    RevisionReason,
)
from memory.services import fact_revisions
from memory.services.fact_keys import (
    key_as_stored,
    key_look_alike_refuse,
    live_look_alike,
    renamed_since,
)
from memory.services.fact_ownership import (
    OWNED_AT_CREATION,
    OWNER_ACTORS,
    UPDATABLE_FIELDS,
    agent_fields,
    forgotten_by,
    normalize_subjects,
    owned_after,
    owner_forgot,
    revival_refused,
)
from memory.services.fact_revisions import (
    NO_FACT,
    fact_changed_refuse,
    fact_snapshot,
    revision_record,
)
from memory.services.fact_sources import said_before_the_value, source_present
from memory.services.forgetting_restated import fact_key_back, set_aside, stated_before_forget
from memory.services.indexing import KIND_FACT, index_enqueue
from memory.services.settings import values_same
from memory.services.ttl import parse_ttl

logger = logging.getLogger(__name__)

KEY_OF_OTHER_KIND_MESSAGE = (
    "La clé « {key} » est déjà prise par un autre genre de mémoire (propriétaire, "
    "moi ou objectif) : choisissez-en une autre."
)


def default_importance(memory_type: str) -> float:
    """The importance of a fact of this type when nobody gave one."""
    return DEFAULT_IMPORTANCE[MemoryType(memory_type)]


def _stated(
    *,
    memory_type: str | None,
    importance: float | None,
    subjects: Iterable[str] | None,
    source: str | None,
    channel: str | None,
    ttl: str | None,
) -> dict[str, object]:
    """The fields a write states (ttl "" states "forever"; None states nothing). A ttl
    counts from now: a statement made again renews it (review: counted from the
    statement's message, a digest dated by its batch's oldest message stored facts
    already expired, and an older message's late statement cut short an expiry a later
    one had renewed)."""
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
    dated_by: int | None = None,
    drawn_from: Collection[int] = (),
    actor: str = Actor.USER,
    kind: str = FactKind.OWNER,
    category: str | None = None,
    extracted: bool | None = None,
) -> tuple[Fact, bool]:
    """Create the fact ``key``, or restate it when the key exists. Returns (fact, created).

    A restatement changes only what it states: an argument left None keeps the
    stored field (defaults apply to a new fact only), an unchanged restatement
    writes nothing (no revision, no re-embedding), and the agent never
    overwrites what the owner set (see fact_update). A fact the owner forgot (one by
    one or by a topic) and stated again, by anyone, is a new fact without the forgotten
    history; the forgotten one stays forgotten, restorable (an agent's item the owner adds
    again comes back: its key is its words). ``kind``
    (owner, or the agent's self / goal with its ``category``) never changes: a
    key of another kind is refused. ``dated_by``: the message the forget checks date the
    statement by, when not its source (memory.services.dedup.fact_remember); ``drawn_from``:
    the messages it may come from, all still in memory when it is written (source_present).
    ``extracted``: the revision says « extracted » rather than created / edited (None: when
    the agent writes; an explicit tool write, dedup.fact_remember's, was not extracted).
    """
    if extracted is None:
        extracted = actor == Actor.AGENT
    key = key_as_stored(key, actor)
    source_present(key=key, actor=actor, source_message_id=source_message_id, drawn_from=drawn_from)
    stated = _stated(
        memory_type=memory_type,
        importance=importance,
        subjects=subjects,
        source=source,
        channel=channel,
        ttl=ttl,
    )
    existing = Fact.all_objects.select_for_update().filter(key=key).first()
    if existing is not None and stated_before_forget(
        existing, actor, dated_by or source_message_id
    ):
        # Read before the owner forgot it (a slow or retried extraction): the forget stands.
        # By number: a forgotten fact's key says what it was about (QA).
        logger.info(
            "fact #%s was forgotten after the message it comes from: not stored", existing.pk
        )
        return existing, False
    if existing is not None and (
        existing.forgetting_id is not None
        # The owner adding an item of the agent's again (its key is its words) brings it back.
        or (owner_forgot(existing) and (actor == Actor.AGENT or kind == FactKind.OWNER))
    ):
        # Taken by a topic forget that can still be undone: the new statement starts a
        # new fact, and the forgotten one, hidden with its history, moves to a key of its
        # own until the undo gives its key back (forgetting_restore) or the purge ends it.
        # So does a fact the owner forgot one by one when its key is stated again: the
        # agent neither brings it back nor sees anything of it (its subjects, its
        # history), nor does the owner's new value (QA: the forgotten words came back in
        # the revisions, a keyword search and the export); the owner can still restore
        # it (fact_restore).
        set_aside(existing)
        existing = None
        if actor == Actor.AGENT:
            # Stated after the forget (checked above, on the forgotten fact): a live fact
            # that looks like the key (the owner's « Medecin_Traitant » beside the
            # forgotten « medecin_traitant ») is the one it is about, not a second one.
            alike = live_look_alike(key, kind=kind)
            if alike is not None:
                existing = Fact.all_objects.select_for_update().filter(key=alike, kind=kind).first()
    elif existing is not None and existing.forgotten:
        # Forgotten by the agent or by its expiry: brought back, it would stand beside a live
        # fact whose key looks like it, both in the prompt (QA: the owner's « Statut »
        # written once the agent's « statut » expired). The agent's statement lands on that
        # live fact; the owner's is refused as a new look-alike key is.
        alike = live_look_alike(key, but=existing.pk, kind=kind)
        if alike is not None and actor == Actor.AGENT:
            existing = Fact.all_objects.select_for_update().filter(key=alike, kind=kind).first()
        elif alike is not None:
            key_look_alike_refuse(key, but=existing.pk)
    if (
        actor == Actor.AGENT
        and source_message_id
        and (existing is None or said_before_the_value(existing, source_message_id))
    ):
        # Stated by a message older than the owner's rename of the key: that fact. Its own
        # message, not ``dated_by`` (a digest's oldest: review, later news landed there).
        # Forgotten since, it stays so (fact_update: the agent never revives the owner's
        # forget; QA 3: the old key was taken as a new one, the fact came back live). Also
        # when the key holds a fact a later message gave it (the agent stated the old key
        # as news after the rename): the old message is not about that one (state machine).
        renamed = renamed_since(key, kind=kind, message_id=source_message_id)
        if renamed is not None:
            existing = Fact.all_objects.select_for_update().filter(pk=renamed).first()
    if existing is not None and existing.kind != kind:
        raise MemoryServiceError(KEY_OF_OTHER_KIND_MESSAGE.format(key=key))
    if existing is None and actor != Actor.AGENT:
        key_look_alike_refuse(key)
    if category is not None:
        stated["category"] = category
    if existing is None:
        memory_type = stated.get("memory_type", MemoryType.FACT)
        fact = Fact(
            key=key,
            value=value.strip(),
            memory_type=memory_type,
            importance=stated.get("importance", default_importance(memory_type)),
            subjects=stated.get("subjects", []),
            source=stated.get("source", FactSource.MANUAL),
            channel=stated.get("channel", ""),
            expires_at=stated.get("expires_at"),
            source_message_id=source_message_id,
            owner_fields=owned_after([], actor, [*OWNED_AT_CREATION, *stated]),
            kind=kind,
            category=stated.get("category", ""),
        )
        fact.full_clean()
        fact.save()
        reason = RevisionReason.EXTRACTED if extracted else RevisionReason.CREATED
        revision_record(fact=fact, actor=actor, reason=reason, old_value="", before=NO_FACT)
        index_enqueue(KIND_FACT, fact.id)
        return fact, True
    if actor == Actor.AGENT:
        # A restatement does not move the fact to another channel or source.
        stated.pop("channel", None)
        stated.pop("source", None)
    fact = fact_update(
        fact=existing,
        actor=actor,
        reason=RevisionReason.EXTRACTED if extracted else RevisionReason.EDITED,
        value=value,
        source_message_id=source_message_id,
        **stated,
    )
    return fact, False


@transaction.atomic
def fact_update(
    *,
    fact: Fact,
    actor: str,
    reason: str = RevisionReason.EDITED,
    note: str = "",
    revive: bool = True,
    opened: str | None = None,
    **fields,
) -> Fact:
    """Change some fields of a fact, on the row as it is NOW, and record who changed what.

    The row is re-read and locked inside the transaction, and only the changed
    columns are written: a caller may hold an instance read before a slow call
    (an LLM decision), and saving that whole instance would undo an edit or a
    forget made meanwhile. Nothing differs: nothing is written (no revision, no
    re-embedding). The owner's writes (user, admin) mark the fields they set as
    theirs (``owner_fields``: those they changed, and an expiry they stated even
    unchanged, see OWNED_WHEN_STATED); an agent write never changes those (the value
    included: it is left, and logged) and only adds to the subjects. A forgotten
    fact is revived, and so is an expired one the purge has not reached yet (an
    expired one without its expiry, else the next purge would take it again),
    unless ``revive`` is False (a merge decided before the forget): then a
    forgotten fact stays as it is; the agent's write never revives a fact the owner forgot
    (fact_ownership.revival_refused): returned still forgotten, nothing written.
    ``opened``: the fact's version the caller's edit was made on (fact_version); changed
    since, nothing is written (FactChanged).
    """
    unknown = set(fields) - UPDATABLE_FIELDS
    if unknown:
        raise TypeError(f"fact_update cannot change {sorted(unknown)}")
    current = fact_revisions.fact_locked(fact)
    # Decided on the row as locked: a forget may have landed since the caller read it (QA:
    # the agent's PATCH, checked "not forgotten" by the view, revived the owner's forget).
    # Before the version check, whose refusal would tell the agent the forgotten value.
    if current.forgotten and (not revive or revival_refused(current, actor)):
        logger.info("fact #%s was forgotten meanwhile: the write is dropped", current.pk)
        return current
    if (
        opened is not None
        and fact_revisions.fact_version(current) != opened
        and fact_already_holds(current, actor, fields)
    ):
        # The same edit again (a double submit, a request retried after a lost answer):
        # the row holds what it asks and the caller's mark on it, nothing to refuse
        # (QA 3: refused as a change made since, by itself; RFC 9110 13.1.1 allows this).
        return current
    if actor == Actor.AGENT and said_before_the_value(current, fields.get("source_message_id")):
        # A late extraction of an older message: a later one gave the value it would replace
        # (state machine: whichever extraction ran last decided what the memory held).
        logger.info("fact #%s: a later message gave its value; the statement is left", current.pk)
        return current
    # Changed since the caller's form read it (QA: a second tab's save undid the first).
    fact_changed_refuse(current, opened)
    if "ttl" in fields:
        fields["expires_at"] = parse_ttl(fields.pop("ttl") or None)
    if "subjects" in fields:
        fields["subjects"] = normalize_subjects(fields["subjects"])
    if isinstance(fields.get("value"), str):
        fields["value"] = fields["value"].strip()
    stated = list(fields)  # what the writer said, before the rules below add to it
    # An expired fact the purge has not reached yet is stated again as one it forgot: it
    # comes back the same way, so whether the ten-minute purge ran first decides nothing.
    expired_now = not current.forgotten and current.is_expired
    reviving = (current.forgotten and current.forgetting_id is None) or expired_now
    if reviving and current.is_expired and "expires_at" not in fields:
        fields["expires_at"] = None
    if (
        actor in OWNER_ACTORS
        and fields.get("value", current.value) != current.value
        and "expires_at" not in fields
        and "expires_at" not in (current.owner_fields or [])
    ):
        # The owner's value lives as long as the owner says: not by the agent's TTL. Only
        # a new value: the edit form re-sends the value unchanged with an empty TTL
        # ("expiration inchangée"), which keeps the agent's expiry.
        fields["expires_at"] = None
    if actor not in OWNER_ACTORS and actor != Actor.AGENT:
        # A system write (memory_seed_self) never changes what the owner wrote either (QA
        # 7b: a seed line superseded a limitation the owner wrote herself).
        fields = agent_fields(current, fields)
    if actor == Actor.AGENT:
        owned_now = current.owner_fields or []
        by = None
        if reviving and not expired_now and {"value", "expires_at"} & set(owned_now):
            by = forgotten_by(current)  # read once: the two rules below ask it
        released = set()
        if reviving and "value" in owned_now and by != Actor.AGENT:
            # The owner's words ran out (the expiry purge forgot them): the agent's news
            # (a restatement that may undo the forget, see fact_store) is stored, and the
            # value does not come back under the owner's lock (their other settings
            # stay). Not when the agent forgot the fact itself: forgetting, then stating
            # again, never replaces what the owner wrote.
            released.add("value")
        news = fields.get("value", current.value) != current.value
        value_free = "value" in released or "value" not in owned_now
        if reviving and news and value_free and (expired_now or by == Actor.SYSTEM):
            # News on a fact whose owner-given expiry ran out: that expiry was for the
            # words it held, which ran out with it, the owner's (QA 7b) or the agent's
            # own (QA 9b: the owner set only the expiry): the news was stored nowhere.
            # The same words stay expired (below).
            released.add("expires_at")
        if released:
            current.owner_fields = [f for f in owned_now if f not in released]
        fields = agent_fields(current, fields)
        expiry = fields.get("expires_at", current.expires_at)
        if reviving and expiry is not None and expiry <= timezone.now():
            # The owner set this expiry: the agent does not bring the fact back past it.
            logger.info("fact #%s expired as the owner set: not revived by the agent", current.pk)
            return current
    if (
        actor not in OWNER_ACTORS
        and "source_message_id" not in fields
        and fields.get("value", current.value) != current.value
    ):
        # A new value with no message (the agent's PATCH, a tool's): no longer the word of
        # the message it came from, dated by its writing (fact_sources.said_before_the_value).
        fields["source_message_id"] = None
    changes = {name: value for name, value in fields.items() if getattr(current, name) != value}
    if "key" in changes and actor != Actor.AGENT:
        key_look_alike_refuse(changes["key"], but=current.pk)
    meaningful = [n for n in changes if n != "source_message_id"]
    owned = owned_after(current.owner_fields or [], actor, meaningful, stated)
    if not meaningful and not reviving:
        # Nothing to record (no revision, no re-embedding); the owner's word still counts.
        quiet = {"owner_fields": owned} if owned != (current.owner_fields or []) else {}
        if "source_message_id" in changes:
            quiet["source_message_id"] = changes["source_message_id"]
        if quiet:
            Fact.all_objects.filter(pk=current.pk).update(**quiet)
            for name, value in quiet.items():
                setattr(current, name, value)
        return current
    before = fact_snapshot(current)
    old_value = current.value
    for name, value in changes.items():
        setattr(current, name, value)
    written = [*changes, "owner_fields", "updated_at"]
    if reviving:
        current.forgotten = False
        current.forgotten_at = None
        written += ["forgotten", "forgotten_at", *_key_back(current)]
    current.owner_fields = owned
    # A key, channel, value or subjects stored before their rules must not block other edits.
    legacy = [name for name in ("key", "channel", "value", "subjects") if name not in changes]
    current.full_clean(exclude=legacy, validate_unique=False)
    current.save(update_fields=written)
    revision_record(
        fact=current, actor=actor, reason=reason, old_value=old_value, before=before, note=note
    )
    index_enqueue(KIND_FACT, current.id)
    _sync(fact, current)
    return current


# How far apart the same duration sent twice may land and still be one edit (fact_already_holds).
TTL_SENT_AGAIN_WITHIN = timedelta(minutes=10)


def fact_already_holds(current: Fact, actor: str, fields: dict[str, object]) -> bool:
    """Whether ``current`` (live) already holds every field of ``fields`` as stated, each
    already the owner's when the owner states it: writing them would change nothing."""
    if not fields or current.forgotten or current.forgetting_id is not None:
        return False
    if current.is_expired:
        return False  # the write brings it back (QA 4: with its If-Match, it stayed expired)
    stated = {("expires_at" if name == "ttl" else name): value for name, value in fields.items()}
    if "ttl" in fields:
        stated["expires_at"] = None
        if fields["ttl"] not in (None, ""):
            # A duration counts from now: the same one sent again a little later (a double
            # submit, a retry after a lost answer) holds if the stored expiry is the one it
            # gave then (QA 9b: refused as a change made since, by itself).
            asked = parse_ttl(fields["ttl"])
            stored = current.expires_at
            # Within a tenth of the duration too: a short TTL sent again extends it.
            within = min(TTL_SENT_AGAIN_WITHIN, (asked - timezone.now()) / 10)
            if stored is None or abs(asked - stored) > within:
                return False
            stated["expires_at"] = stored
    if "subjects" in stated:
        stated["subjects"] = normalize_subjects(stated["subjects"])
    if isinstance(stated.get("value"), str):
        stated["value"] = stated["value"].strip()
    owned = set(current.owner_fields or [])
    return all(
        values_same(getattr(current, name), value)
        and (actor not in OWNER_ACTORS or name in owned or name == "source_message_id")
        for name, value in stated.items()
    )


def _key_back(current: Fact) -> list[str]:
    """A fact coming back that was set aside when the agent stated its key (fact_store)
    takes its key back when free (["key"]: a field to write); else both stay visible,
    this one under the key it waited under (also when the suffix may have cut it short)."""
    key = fact_key_back(current)
    if key == current.key:
        return []
    current.key = key
    return ["key"]


def _sync(fact: Fact, current: Fact) -> None:
    """Give the caller's instance the row as written."""
    fact.__dict__.update(
        {f.attname: getattr(current, f.attname) for f in Fact._meta.concrete_fields}
    )


@transaction.atomic
def fact_forget(*, fact: Fact, actor: str, note: str = "", opened: str | None = None) -> Fact:
    """Soft-delete: the fact stays in T1 with its history, restorable. ``opened``: fact_update's."""
    current = fact_revisions.fact_locked(fact)
    if current.forgotten:
        return current
    fact_changed_refuse(current, opened, forget=True)  # a forget already made: nothing to refuse
    before = fact_snapshot(current)
    current.forgotten = True
    current.forgotten_at = timezone.now()
    current.save(update_fields=["forgotten", "forgotten_at", "updated_at"])
    revision_record(
        fact=current,
        actor=actor,
        reason=RevisionReason.FORGOTTEN,
        old_value=current.value,
        before=before,
        note=note,
    )
    # The indexing machine removes the point of a forgotten fact; the logs keep no text of it.
    index_enqueue(KIND_FACT, current.id)
    from memory.services.copies_redaction import redact_copies

    redact_copies(items={f"fact:{current.pk}"})
    fact.forgotten, fact.forgotten_at = current.forgotten, current.forgotten_at
    return current


@transaction.atomic
def fact_restore(*, fact: Fact, actor: str, note: str = "") -> Fact:
    """Undo a forget. An expired fact comes back without its expiry (else the next
    purge would forget it again); when the owner restores it, it is kept for good."""
    current = fact_revisions.fact_locked(fact)
    expired = current.is_expired
    if not current.forgotten and not expired:
        return current
    before = fact_snapshot(current)
    current.forgotten = False
    current.forgotten_at = None
    if expired:
        current.expires_at = None
        current.owner_fields = owned_after(current.owner_fields or [], actor, ["expires_at"])
    written = ["forgotten", "forgotten_at", "expires_at", "owner_fields", "updated_at"]
    written += _key_back(current)
    if not FACT_ASIDE_KEY_PATTERN.search(current.key) and live_look_alike(
        current.key, but=current.pk, kind=current.kind
    ):
        # A live fact's key looks like it (« Sport » stated since « sport » was forgotten):
        # both stay visible, this one under a key of its own, as beside the same key (QA:
        # two live look-alikes, both in the prompt, the agent's writes on one of them).
        current.key = set_aside(current)
        written = [name for name in written if name != "key"]
    current.save(update_fields=written)
    revision_record(
        fact=current,
        actor=actor,
        reason=RevisionReason.RESTORED,
        old_value=current.value,
        before=before,
        note=note,
    )
    index_enqueue(KIND_FACT, current.id)
    _sync(fact, current)
    return current
