"""An agent's statement is written only while what it was drawn from is still in memory."""

from __future__ import annotations

from collections.abc import Collection

from memory.exceptions import SourceForgotten
from memory.models import Actor, Fact, Message

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
    before the message ``fact``'s value came from: a late extraction (retried after a
    restart, queued behind an outage), whose value a later message replaced. Extractions
    run in any order; the memory holds the newest message's word whichever ran last.

    Messages are ordered as written (created_at, then number: an import keeps their
    dates). A statement with no message (a tool's, the API's) is news; a fact with no
    message, or whose message is gone, has nothing to be older than."""
    if source_message_id is None or fact.source_message_id is None:
        return False
    if source_message_id == fact.source_message_id:
        return False
    written = dict(
        Message.all_objects.filter(pk__in=[source_message_id, fact.source_message_id]).values_list(
            "pk", "created_at"
        )
    )
    if len(written) != 2:
        return False
    return (written[source_message_id], source_message_id) < (
        written[fact.source_message_id],
        fact.source_message_id,
    )
