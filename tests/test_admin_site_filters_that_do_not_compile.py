"""Hand-written admin filters that do not compile are refused as ?e=1 (QA 4: they were
500s after 8753f79, LookupGuard).

LookupGuard checks ``year/month/day`` only as the LAST part of the parameter, and
_unrunnable compiles the query catching NotSupportedError / EmptyResultSet only: a year
compared (``created_at__year__gt=99999``, ``__gte=0``, ``iso_year__gt``) raises ValueError
while compiling (Django's year_lookup_bounds builds datetime(99999, 1, 1)), and a
``__range`` with one value raises IndexError: 500s, raised from inside the guard itself.
Expected: refused as any wrong filter (302 to ?e=1)."""

from __future__ import annotations

import pytest

from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "params",
    [
        {"created_at__year__gt": "99999"},
        {"created_at__year__gte": "0"},
        {"updated_at__year__lt": "10000"},
        {"created_at__iso_year__gt": "99999"},
        {"importance__range": "1"},
    ],
    ids=["year-gt", "year-gte-0", "year-lt", "iso-year-gt", "range-one-value"],
)
def test_a_hand_written_year_comparison_or_range_is_refused_not_a_500(staff_client, params):
    fact_store(key="velo", value="Le vélo est au garage", subjects=["sport"])
    try:
        response = staff_client.get("/admin/memory/fact/", params)
    except Exception as exc:  # the test client re-raises what a browser gets as a 500
        raise AssertionError(f"{params}: 500 ({type(exc).__name__}: {exc})") from None
    assert response.status_code == 302 and response.url.endswith("?e=1"), response.status_code
