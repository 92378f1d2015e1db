"""An agent's statement is written only while what it was drawn from is still in memory."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.db.models import F

from memory.exceptions import SourceForgotten
from memory.models import Actor, Fact, FactRevision, Message

SOURCE_FORGOTTEN_MESSAGE = (
    "Le fait « {key} » vient d'un message oublié depuis : il n'est pas enregistré."
)


def source_present(
    *,
    key: str,
    actor: str,
    source_message_id: int | None,
    drawn_from: Collection[int] = (),
) -> None:
    """Raise SourceForgotten when an agent statement is drawn from a message no longer in
    memory: the owner forgot it (or it was left out) while the statement was made (a slow
    LLM call, a dedup decision). Called in the writing transaction, which holds SQLite's
    write lock, so no forget lands between this check and the write.

    ``drawn_from``: the digest's batch, every message the statement may come from (the
    LLM's numbering of its sources is no proof), each of which must still be in memory and
    undigested (another run digested it meanwhile: its facts are that run's)."""
    if actor != Actor.AGENT:
        return
    if source_message_id is not None and not Message.objects.filter(pk=source_message_id).exists():
        raise SourceForgotten(SOURCE_FORGOTTEN_MESSAGE.format(key=key))
    batch = set(drawn_from)
    if batch and Message.objects.filter(pk__in=batch, digested_at__isnull=True).count() != len(
        batch
    ):
        raise SourceForgotten(SOURCE_FORGOTTEN_MESSAGE.format(key=key))


def said_before_the_value(fact: Fact, source_message_id: int | None) -> bool:
    """Whether an agent statement drawn from message ``source_message_id`` was written
    before ``fact``'s value was: a late extraction (retried after a restart, queued behind
    an outage), whose value a later word replaced. Extractions and writes run in any order;
    the memory holds the newest word whichever ran last.

    Messages are ordered as written (created_at, then number: an import keeps their
    dates). A value drawn from a message is dated by it; a value written with no message
    (the API's POST or PATCH, MCP `remember`, a tool's: fact_update leaves it no source) is
    dated by its writing (QA 9b: a late extraction of an older message replaced it). A
    statement with no message is news."""
    if source_message_id is None or source_message_id == fact.source_message_id:
        return False
    ids = [source_message_id, *([fact.source_message_id] if fact.source_message_id else [])]
    written = dict(Message.all_objects.filter(pk__in=ids).values_list("pk", "created_at"))
    said = written.get(source_message_id)
    if said is None:
        return False
    if fact.source_message_id is not None:
        value_said = written.get(fact.source_message_id)
        if value_said is None:
            return False  # its message is gone: nothing to be older than
        return (said, source_message_id) < (value_said, fact.source_message_id)
    return said < value_written_at(fact)


def value_written_at(fact: Fact) -> datetime:
    """When ``fact``'s value was last written: its last revision that changed the value
    (or the fact's creation)."""
    changed = (
        FactRevision.objects.filter(fact_id=fact.pk)
        .exclude(new_value=F("old_value"))
        .order_by("-created_at", "-id")
        .values_list("created_at", flat=True)
        .first()
    )
    return changed or fact.created_at
