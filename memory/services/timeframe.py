"""Time expressions in a message → the period it asks about (pure; test with a frozen clock).

"qu'est-ce qu'on s'était dit la semaine dernière ?", "en janvier", "le 5
décembre", "hier", "last week": semantic search cannot see dates, so the
retrieval adds a "time" source that favours memories from the period asked.
Recognised (French first, a little English), in the configured time zone:
aujourd'hui / today, hier / yesterday, avant-hier, cette semaine / this week,
la semaine dernière / passée / last week, ce mois-ci / this month, le mois
dernier / last month, début / mi / fin <mois>, en <mois> [année], <mois>
dernier, le <jour> <mois> [année], in / during / last <month>, <month> <day>[,
year], <day> <month>[, year]. A month name alone is not read as a date ("sur
Mars", "May I…"). A month without a year is the latest one that is not in the
future.
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
# An optional year after a month, with or without a comma: "1 February, 2023".
_YEAR = r"(?:,? (\d{4}))?\b"


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

    # "le 5 décembre [2025]", "5 december, 2025", "1st of May"
    match = re.search(
        rf"\b(\d{{1,2}})(?:er|st|nd|rd|th)?(?: of)? ({_MONTH}){_YEAR}", folded
    ) or re.search(rf"\b({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?\b(?!:){_YEAR}", folded)
    if match:
        first_group = match.group(1)
        if first_group.isdigit():
            day, month = int(first_group), _MONTH_INDEX[match.group(2)]
        else:
            day, month = int(match.group(2)), _MONTH_INDEX[first_group]
        year = int(match.group(3)) if match.group(3) else _latest_year(month, day, today)
        try:
            moment = date(year, month, day)
        except ValueError:
            return None
        return _day_bounds(moment, moment, tz)

    # "début / mi / fin janvier", "en janvier [2026]", "in january", "janvier 2026",
    # "janvier dernier", "last January". A month name alone is no signal: "sur Mars"
    # (the planet), "May I…", "mais" mistyped "mai".
    months = re.finditer(
        rf"\b(debut|mi|fin|en|in|during|last|au mois de)?[ -]?({_MONTH}){_YEAR}"
        rf"(?: (dernier|derniere))?\b",
        folded,
    )
    match = next((m for m in months if m.group(1) or m.group(3) or m.group(4)), None)
    if match:
        month = _MONTH_INDEX[match.group(2)]
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
