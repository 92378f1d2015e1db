"""A forgotten fact stated again: when the statement undoes the forget, and what an undo
of a topic forget does with a key stated again meanwhile.

- An agent restatement drawn from a message written before the forget (a slow or
  retried extraction) never undoes it; one from a later message is news, and so
  is the agent stating it with no message (a tool): it brings the fact back.
- A key a topic forget took, stated again while the forget can be undone, starts a
  new fact; the forgotten one waits, hidden with its history, under a key of its
  own ("<key> (oubli n° N)") until the undo gives its key back or the purge ends it.
"""

from __future__ import annotations

from memory.models import (
    FACT_ASIDE_KEY_PATTERN,
    Actor,
    Fact,
    FactRevision,
    Forgetting,
    RevisionReason,
)
from memory.selectors import message_written_at

ASIDE_KEY = "{key} (oubli n° {id})"
# A fact the owner forgot one by one, set aside when the agent states its key: its own id.
FACT_ASIDE_KEY = "{key} (fait oublié n° {id})"
ASIDE_PATTERN = FACT_ASIDE_KEY_PATTERN  # the rule the key validator refuses (models)


def stated_before_forget(fact: Fact, actor: str, source_message_id: int | None) -> bool:
    """Whether an agent restatement of the forgotten ``fact`` comes from a message written
    before the forget (a source message gone counts as before): it must not undo it."""
    if actor != Actor.AGENT or not fact.forgotten or source_message_id is None:
        return False
    written = message_written_at(source_message_id)
    return written is None or fact.forgotten_at is None or written <= fact.forgotten_at


# At most this many facts forgotten since a statement's message are compared with it.
RESTATED_COMPARED_MAX = 50


def restates_forgotten(
    *, key: str, value: str, kind: str, actor: str, source_message_id: int | None
) -> Fact | None:
    """The fact forgotten since the message an agent statement is drawn from that it states
    again under any key (a late extraction that named it otherwise): the forget stands.

    The same rule as dedup's without an LLM (memory.services.dedup.rule_decide): a text
    this close, saying the same numbers. When nothing was forgotten since the message, or
    the same text was, no comparison is needed. Otherwise the embedder must answer: while
    it is down this raises StoreUnavailable (and EmbeddingInvalid when it refuses the
    text), so the statement is not stored and a job retrying it waits for the embedder.
    An outage delays a forget's effect, never weakens it.
    """
    if actor != Actor.AGENT or source_message_id is None:
        return None
    written = message_written_at(source_message_id)
    forgotten = Fact.all_objects.filter(kind=kind, forgotten=True)
    if written is not None:
        forgotten = forgotten.filter(forgotten_at__gte=written)
    recent = list(forgotten.order_by("-forgotten_at")[:RESTATED_COMPARED_MAX])
    if not recent:
        return None
    same = [f for f in recent if " ".join(f.value.split()) == " ".join(value.split())]
    if same:
        return same[0]
    return _near_duplicate(key, value, recent)


def _near_duplicate(key: str, value: str, facts: list[Fact]) -> Fact | None:
    import numpy as np

    from memory.services.dedup import Candidate, rule_decide
    from memory.services.index_documents import fact_text
    from memory.stores.embedders import get_embedder

    # Not caught: "cannot compare" is not "not a restatement" (see restates_forgotten).
    vectors = get_embedder().embed_documents(
        [fact_text(Fact(key=key, value=value)), *(fact_text(f) for f in facts)]
    )
    matrix = np.asarray(vectors)
    scores = matrix[1:] @ matrix[0]
    ranked = sorted(
        (Candidate(fact=f, score=float(score)) for f, score in zip(facts, scores, strict=True)),
        key=lambda c: -c.score,
    )
    _, target = rule_decide(value, ranked)
    return target


def aside_key(key: str, number: int, template: str = ASIDE_KEY) -> str:
    """The key a topic-forgotten fact waits under while its own is used again, ``number``
    its forget's (with FACT_ASIDE_KEY and the fact's id: one the owner forgot one by one)."""
    suffix = template.format(key="", id=number)
    return key[: Fact._meta.get_field("key").max_length - len(suffix)] + suffix


def fact_key_back(fact: Fact) -> str:
    """The key a fact set aside under its own id (FACT_ASIDE_KEY) has when it comes back:
    its own when free, else the one it waited under (so too when the suffix may have cut
    the key short: an aside key that fills the column)."""
    suffix = aside_key("", fact.pk, FACT_ASIDE_KEY)
    if not fact.key.endswith(suffix) or len(fact.key) >= Fact._meta.get_field("key").max_length:
        return fact.key
    key = fact.key[: -len(suffix)]
    holder = Fact.all_objects.filter(key=key).first()
    if holder is not None and _forgotten_alone(holder):
        # Forgotten one by one since: it waits aside under its own id in its turn (QA: the
        # fact given back stayed under its aside key beside no live fact of that key).
        set_aside(holder)
        holder = None
    return fact.key if holder is not None else key


def _forgotten_alone(fact: Fact) -> bool:
    """A fact forgotten one by one (no topic forget holds it), or expired that the purge
    has not reached yet (it is one: whether the purge ran first decides nothing, QA 4):
    no live fact."""
    return (fact.forgotten or fact.is_expired) and fact.forgetting_id is None


def key_unaside(key: str) -> str:
    """The key a fact had before a forget set it aside (itself when it was not)."""
    return ASIDE_PATTERN.sub("", key)


def set_aside(fact: Fact) -> str:
    """Free the key of a forgotten fact for a new one: a fact a topic forget took, under its
    forget's number (``fact.forgetting_id``); one forgotten one by one, under its own id
    (fact_restore gives it its key back when the key is free again)."""
    keys = [aside_key(fact.key, fact.forgetting_id)] if fact.forgetting_id is not None else []
    number = fact.pk
    keys.append(aside_key(fact.key, number, FACT_ASIDE_KEY))
    while Fact.all_objects.filter(key=keys[0]).exists():
        # Taken by a fact imported under such a key from another memory: the next free
        # one (the undo or the restore then leaves this fact under it, both visible).
        keys.pop(0)
        if not keys:
            number += 1
            keys.append(aside_key(fact.key, number, FACT_ASIDE_KEY))
    Fact.all_objects.filter(pk=fact.pk).update(key=keys[0])
    return keys[0]


def key_back(fact: Fact, forgetting: Forgetting) -> None:
    """On the undo of ``forgetting``: a restored fact set aside takes its key back.

    When the key's holder was taken by another forget meanwhile, that one moves aside in
    its turn. When the agent stated the key meanwhile (a fact with nothing of the owner's), the
    restored fact takes it and the agent's statement becomes a restatement of it, under
    the usual rule (the agent never overwrites what the owner set), unless the restored
    fact goes back to being forgotten (it was forgotten one by one before this forget
    took it): then the agent's fact keeps the key and the restored one waits aside under
    its own id. When the owner stated it, the owner's newer fact keeps the key and the
    restored one stays under its aside key, both visible; when that fact was forgotten
    one by one since, a restored fact that comes back live takes the key and it waits
    aside under its own id. The caller holds the transaction.
    """
    from memory.services.facts import fact_update
    from memory.services.removal import remove_deleted_points

    suffix = aside_key("", forgetting.id)
    if not fact.key.endswith(suffix):
        return
    key = fact.key[: -len(suffix)]
    holder = Fact.all_objects.filter(key=key).first()
    if holder is not None and holder.forgetting_id is not None:
        # Taken by another forget meanwhile: it waits aside in its turn.
        set_aside(holder)
        holder = None
    comes_back_live = not Fact.all_objects.filter(pk=fact.pk, forgotten=True).exists()
    if holder is not None and comes_back_live and _forgotten_alone(holder):
        # Forgotten one by one since the forget: the fact given back live takes its key,
        # the holder waits aside under its own id (fact_restore gives it back when free).
        # It stayed under its aside key beside no live fact of that key, and the agent's
        # next statement of the key started a second live fact beside it (QA).
        set_aside(holder)
        holder = None
    if holder is not None and (holder.owner_fields or holder.forgotten or holder.kind != fact.kind):
        return
    if holder is not None and not comes_back_live:
        # Forgotten one by one before this forget took it, it goes back to that forget: the
        # agent's statement made meanwhile is news that forget does not concern (moved onto
        # the fact, it revived the owner's forget; refused there, it was lost). It keeps the
        # key; the fact waits aside under its own id, as when the agent states a key the
        # owner forgot (set_aside).
        set_aside(Fact(pk=fact.pk, key=key, forgetting_id=None))
        return
    stated = None
    if holder is not None:  # the agent's: restated on the restored fact below
        stated = {"value": holder.value, "subjects": holder.subjects}
        if holder.expires_at is not None:
            # A temporary state the agent stated stays temporary (QA 3: the undo dropped
            # its expiry with the holder row, and the restored fact lived for good).
            stated["expires_at"] = holder.expires_at
        holder_id = holder.pk
        FactRevision.all_objects.filter(fact_id=holder_id).delete()
        Fact.all_objects.filter(pk=holder_id).delete()
        remove_deleted_points([], [holder_id], [])
    Fact.all_objects.filter(pk=fact.pk).update(key=key)
    if stated is not None:
        fact_update(
            fact=Fact.all_objects.get(pk=fact.pk),
            actor=Actor.AGENT,
            reason=RevisionReason.EXTRACTED,
            note=f"énoncé pendant l'oubli n° {forgetting.id}",
            **stated,
        )


def look_alike_aside(fact: Fact, forgetting: Forgetting) -> None:
    """On the undo of ``forgetting``: a fact it gives back live beside a live fact whose key
    looks like its own (« Sport » stated since « sport » was taken) waits under the forget's
    aside key, visible, as fact_restore sets it aside (QA: the undo left both live, both in
    the prompt, the agent's writes folding onto one of them). The newer fact keeps its key.
    The caller holds the transaction."""
    from memory.services.fact_keys import live_look_alike

    current = Fact.all_objects.filter(pk=fact.pk, forgotten=False).first()
    if current is None or ASIDE_PATTERN.search(current.key):
        return
    if live_look_alike(current.key, but=current.pk, kind=current.kind) is not None:
        set_aside(Fact(pk=current.pk, key=current.key, forgetting_id=forgetting.id))
