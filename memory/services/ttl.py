"""Time-to-live of facts: "30m", "1h", "7d", "2w" → an expiry date."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.utils import timezone

from memory.exceptions import InvalidTTL

TTL_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
TTL_PATTERN = re.compile(r"^\s*(\d{1,4})\s*([mhdw])\s*$", re.IGNORECASE)
INVALID_TTL_MESSAGE = (
    "Durée de vie invalide : {value!r}. Utilisez un nombre suivi de m (minutes), "
    "h (heures), d (jours) ou w (semaines), par exemple « 30m », « 1h », « 7d »."
)


def parse_ttl(ttl: str | None, *, now: datetime | None = None) -> datetime | None:
    """The expiry of a fact living ``ttl`` from ``now``; None (or "") means forever."""
    if ttl is None or (isinstance(ttl, str) and ttl.strip() == ""):
        return None
    if not isinstance(ttl, str):
        raise InvalidTTL(INVALID_TTL_MESSAGE.format(value=ttl))
    match = TTL_PATTERN.match(ttl)
    if match is None or int(match.group(1)) == 0:
        raise InvalidTTL(INVALID_TTL_MESSAGE.format(value=ttl))
    amount, unit = int(match.group(1)), match.group(2).lower()
    return (now or timezone.now()) + timedelta(**{TTL_UNITS[unit]: amount})
