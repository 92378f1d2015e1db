"""Time expressions that were misread: years after a comma, English month-day order,
months that are not months ("Mars", "May I"), and relative times across the DST change."""

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from memory.services.formatting import relative_time_fr
from memory.services.timeframe import time_window

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 3, 20, 18, 0, tzinfo=PARIS)  # a Friday


def _days(text, now=NOW):
    window = time_window(text, now=now, tz=PARIS)
    if window is None:
        return None
    start, end = window
    return start.date(), (end.date() - start.date()).days


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The year is kept after a comma, in both orders.
        ("What happened on 1 February, 2023?", (date(2023, 2, 1), 1)),
        ("What happened on February 1, 2023?", (date(2023, 2, 1), 1)),
        ("on February 1st, 2023", (date(2023, 2, 1), 1)),
        ("le 1er février, 2023", (date(2023, 2, 1), 1)),
        ("February 14", (date(2026, 2, 14), 1)),
        ("in February, 2023", (date(2023, 2, 1), 28)),
        ("en février 2023", (date(2023, 2, 1), 28)),
        ("in March 2024", (date(2024, 3, 1), 31)),
        ("janvier dernier", (date(2026, 1, 1), 31)),
        ("last January", (date(2026, 1, 1), 31)),
        # Not months.
        ("Tu crois qu'on ira un jour sur Mars ?", None),
        ("la mission vers Mars", None),
        ("May I ask you something?", None),
        ("may i have the code", None),
        ("I may be late", None),
        # Still months, with a signal.
        ("en mars", (date(2026, 3, 1), 31)),
        ("in May", (date(2025, 5, 1), 31)),
        ("le 3 mars", (date(2026, 3, 3), 1)),
        ("during March", (date(2026, 3, 1), 31)),
    ],
)
def test_time_window_reads_years_orders_and_false_months(text, expected):
    assert _days(text) == expected


@pytest.mark.parametrize(
    ("now", "moment", "expected"),
    [
        # Across the spring change (29 March 2026, 02:00 -> 03:00): the clocks say
        # 3 hours, 2 really passed.
        (
            datetime(2026, 3, 29, 4, 30, tzinfo=PARIS),
            datetime(2026, 3, 29, 1, 30, tzinfo=PARIS),
            "il y a 2 heures",
        ),
        # Across the autumn change (25 October 2026, 03:00 -> 02:00): the clocks say
        # 2 hours, 3 really passed.
        (
            datetime(2026, 10, 25, 3, 30, tzinfo=PARIS),
            datetime(2026, 10, 25, 0, 30, tzinfo=PARIS) + timedelta(hours=1),
            "il y a 3 heures",
        ),
        # 59 real minutes across the spring change are not "il y a 1 heure".
        (
            datetime(2026, 3, 29, 3, 29, tzinfo=PARIS),
            datetime(2026, 3, 29, 1, 30, tzinfo=PARIS),
            "il y a 59 minutes",
        ),
    ],
)
def test_relative_time_counts_real_time_across_the_daylight_saving_change(now, moment, expected):
    assert relative_time_fr(moment, now=now, tz=PARIS) == expected
