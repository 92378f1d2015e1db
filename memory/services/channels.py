"""Per-channel settings: which channels are observed rooms.

A message saved in an observed room (memory.services.messages.message_save)
is kept in T1 as usual but is not an exchange: its point goes to the `live`
collection, auto-retrieval injects it on the other channels as an extract of
an observed room, the agent does not answer there, and the digest
(memory.services.digest) turns what it holds into durable facts.
"""

from __future__ import annotations

from django.db import transaction

from memory.models import ChannelSettings, Message
from memory.stores.compiled import CompiledRead, param


def _observed(_now):
    return ChannelSettings.objects.filter(channel=param("channel"), observed=True).values_list(
        "id"
    )[:1]


# Read for every message saved (message_save): compiled once (stores/compiled.py).
_OBSERVED = CompiledRead(_observed)


def channel_is_observed(channel: str) -> bool:
    return bool(_OBSERVED.rows(channel=channel))


def channels_observed() -> list[str]:
    return list(
        ChannelSettings.objects.filter(observed=True)
        .order_by("channel")
        .values_list("channel", flat=True)
    )


def channel_settings_get(*, channel: str) -> ChannelSettings:
    """The settings of a channel (unsaved defaults when it has none)."""
    from memory.services.messages import channel_validate

    channel = channel_validate(channel)
    return ChannelSettings.objects.filter(channel=channel).first() or ChannelSettings(
        channel=channel
    )


@transaction.atomic
def channel_settings_set(*, channel: str, observed: bool) -> ChannelSettings:
    """Mark a channel observed or not. Only the messages saved from now on follow it:
    what a room said before stays where it was indexed."""
    from memory.services.messages import channel_validate

    settings, _ = ChannelSettings.objects.update_or_create(
        channel=channel_validate(channel), defaults={"observed": observed}
    )
    return settings


def live_pending_count() -> int:
    """Messages of observed rooms the digest has not read yet (what `live` holds, or will)."""
    return Message.objects.filter(observed=True, digested_at__isnull=True).count()
