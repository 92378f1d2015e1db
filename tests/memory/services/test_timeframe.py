"""Time expressions → the period asked about, against a frozen clock (Friday 20 March 2026, Paris)."""

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from memory.services.timeframe import time_window

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 3, 20, 18, 0, tzinfo=PARIS)  # a Friday


def _days(text):
    window = time_window(text, now=NOW, tz=PARIS)
    if window is None:
        return None
    start, end = window
    return start.date(), (end - start).days


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Qu'est-ce qu'on s'était dit hier ?", (date(2026, 3, 19), 1)),
        ("et avant-hier ?", (date(2026, 3, 18), 1)),
        ("What did we say yesterday?", (date(2026, 3, 19), 1)),
        ("On a parlé de quoi aujourd'hui ?", (date(2026, 3, 20), 1)),
        ("le train pour Lyon la semaine dernière", (date(2026, 3, 9), 7)),
        ("la semaine passée", (date(2026, 3, 9), 7)),
        ("last week", (date(2026, 3, 9), 7)),
        ("Et cette semaine ?", (date(2026, 3, 16), 5)),
        ("le mois dernier", (date(2026, 2, 1), 28)),
        ("en janvier", (date(2026, 1, 1), 31)),
        ("Pourquoi je dormais mal en Janvier ?", (date(2026, 1, 1), 31)),
        ("la rétro en décembre", (date(2025, 12, 1), 31)),  # the latest December: last year
        ("en decembre 2024", (date(2024, 12, 1), 31)),
        ("in February", (date(2026, 2, 1), 28)),
        ("Fin janvier, le kiné avait dit quoi ?", (date(2026, 1, 21), 11)),
        ("début mars", (date(2026, 3, 1), 11)),
        ("Qu'est-ce que j'avais annoncé le 5 décembre ?", (date(2025, 12, 5), 1)),
        ("le 1er mars", (date(2026, 3, 1), 1)),
        ("le 31 février", None),
        ("Comment va mon épaule ?", None),
        ("mais oui", None),
    ],
)
def test_time_window(text, expected):
    assert _days(text) == expected


def test_the_window_is_in_the_configured_time_zone():
    start, end = time_window("hier", now=NOW, tz=PARIS)
    assert start.tzinfo == PARIS and start.hour == 0
