"""Time-to-live of facts: "30m", "1h", "7d", "2w" → an expiry date."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.utils import timezone

from memory.exceptions import InvalidTTL
from memory.services.formatting import clean_text

TTL_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
TTL_PATTERN = re.compile(r"^\s*(\d+)\s*([mhdw])\s*$", re.IGNORECASE)
TTL_AMOUNT_MAX = 9999
# A refusal quotes what was given on one short line (QA: it echoed any length).
TTL_QUOTED_MAX = 40
INVALID_TTL_MESSAGE = (
    "Durée de vie invalide : « {value} ». Utilisez un nombre suivi de m (minutes), "
    "h (heures), d (jours) ou w (semaines), par exemple « 30m », « 1h », « 7d »."
)
TTL_OUT_OF_RANGE_MESSAGE = (
    "Durée de vie hors limites : « {value} ». Le nombre va de 1 à {max} (une durée de vie "
    "plus longue : pas de durée de vie, le fait reste)."
)


def parse_ttl(ttl: str | None, *, now: datetime | None = None) -> datetime | None:
    """The expiry of a fact living ``ttl`` from ``now``; None (or "") means forever."""
    if ttl is None or (isinstance(ttl, str) and ttl.strip() == ""):
        return None
    quoted = clean_text(str(ttl), max_chars=TTL_QUOTED_MAX)
    if not isinstance(ttl, str):
        raise InvalidTTL(INVALID_TTL_MESSAGE.format(value=quoted))
    match = TTL_PATTERN.match(ttl)
    if match is None:
        raise InvalidTTL(INVALID_TTL_MESSAGE.format(value=quoted))
    digits, unit = match.group(1), match.group(2).lower()
    # A number of thousands of digits is out of range too (int() refuses past 4,300).
    digits = digits.lstrip("0") or "0"
    amount = int(digits) if len(digits) <= len(str(TTL_AMOUNT_MAX)) else TTL_AMOUNT_MAX + 1
    if not 1 <= amount <= TTL_AMOUNT_MAX:
        raise InvalidTTL(TTL_OUT_OF_RANGE_MESSAGE.format(value=quoted, max=TTL_AMOUNT_MAX))
    return (now or timezone.now()) + timedelta(**{TTL_UNITS[unit]: amount})
