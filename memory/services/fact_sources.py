"""An agent's statement is written only while what it was drawn from is still in memory."""

from __future__ import annotations

from collections.abc import Collection

from memory.exceptions import SourceForgotten
from memory.models import Actor, Message

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
