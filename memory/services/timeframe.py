"""Time expressions in a message → the period it asks about (pure; test with a frozen clock).

"qu'est-ce qu'on s'était dit la semaine dernière ?", "en janvier", "le 5
décembre", "hier", "last week": semantic search cannot see dates, so the
retrieval adds a "time" source that favours memories from the period asked.
Recognised (French first, a little English), in the configured time zone:
aujourd'hui / today, hier / yesterday, avant-hier, cette semaine / this week,
la semaine dernière / passée / last week, ce mois-ci / this month, le mois
dernier / last month, début / mi / fin <mois>, en <mois> [année], le <jour>
<mois> [année], in <month>. A month without a year is the latest one that is
not in the future.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime, time, timedelta, tzinfo

MONTHS_FR = [
    "janvier",
    "fevrier",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "aout",
    "septembre",
    "octobre",
    "novembre",
    "decembre",
]
MONTHS_EN = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_INDEX = {name: i + 1 for i, name in enumerate(MONTHS_FR)} | {
    name: i + 1 for i, name in enumerate(MONTHS_EN)
}
_MONTH = "|".join(sorted(_MONTH_INDEX, key=len, reverse=True))


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _day_bounds(first: date, last: date, tz: tzinfo) -> tuple[datetime, datetime]:
    return (
        datetime.combine(first, time.min, tzinfo=tz),
        datetime.combine(last + timedelta(days=1), time.min, tzinfo=tz),
    )


def _month_range(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    following = date(year + (month == 12), month % 12 + 1, 1)
    return first, following - timedelta(days=1)


def _latest_year(month: int, day: int, today: date) -> int:
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def time_window(text: str, *, now: datetime, tz: tzinfo) -> tuple[datetime, datetime] | None:
    """The [start, end) period a message asks about, or None when it names none."""
    folded = _fold(text)
    today = now.astimezone(tz).date()
    monday = today - timedelta(days=today.weekday())

    if re.search(r"\bavant[- ]hier\b", folded):
        day = today - timedelta(days=2)
        return _day_bounds(day, day, tz)
    if re.search(r"\b(hier|yesterday)\b", folded):
        day = today - timedelta(days=1)
        return _day_bounds(day, day, tz)
    if re.search(r"\b(aujourd'?hui|today|ce matin|this morning)\b", folded):
        return _day_bounds(today, today, tz)
    if re.search(r"\b(la semaine (derniere|passee)|last week)\b", folded):
        return _day_bounds(monday - timedelta(days=7), monday - timedelta(days=1), tz)
    if re.search(r"\b(cette semaine|this week)\b", folded):
        return _day_bounds(monday, today, tz)
    if re.search(r"\b(le mois (dernier|passe)|last month)\b", folded):
        last = today.replace(day=1) - timedelta(days=1)
        return _day_bounds(*_month_range(last.year, last.month), tz)
    if re.search(r"\b(ce mois-ci|this month)\b", folded):
        return _day_bounds(today.replace(day=1), today, tz)

    # "le 5 décembre [2025]", "5 december"
    match = re.search(rf"\b(?:le |on )?(\d{{1,2}})(?:er)? ({_MONTH})(?: (\d{{4}}))?\b", folded)
    if match:
        day, month = int(match.group(1)), _MONTH_INDEX[match.group(2)]
        year = int(match.group(3)) if match.group(3) else _latest_year(month, day, today)
        try:
            moment = date(year, month, day)
        except ValueError:
            return None
        return _day_bounds(moment, moment, tz)

    # "début / mi / fin janvier", "en janvier [2026]", "in january", "janvier"
    match = re.search(
        rf"\b(debut|mi|fin|en|in|au mois de)?[ -]?({_MONTH})(?: (\d{{4}}))?\b", folded
    )
    if match:
        month = _MONTH_INDEX[match.group(2)]
        if match.group(2) == "mai" and not match.group(1):
            return None  # "mai" alone is too weak a signal (typos of "mais"); "en mai" counts
        year = int(match.group(3)) if match.group(3) else _latest_year(month, 1, today)
        first, last = _month_range(year, month)
        part = match.group(1)
        if part == "debut":
            last = first + timedelta(days=10)
        elif part == "mi":
            first, last = first + timedelta(days=9), first + timedelta(days=20)
        elif part == "fin":
            first = last - timedelta(days=10)
        return _day_bounds(first, last, tz)
    return None
