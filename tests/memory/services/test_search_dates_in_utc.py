"""Every writer and reader of a date checks the memory's years in UTC, as the API does.

The API refused 1000-01-01T00:30+05:00 (the year 999 in UTC); the search filters of the
MCP and agent tools and of /memory, and the admin's expiry, checked it in its own offset
and took it (review: the date rule had two homes).
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memory.services.search import DATE_RANGE_UTC_MESSAGE, search_filters_build

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "since", ["1000-01-01T00:30:00+05:00", "9998-12-31T23:30:00-05:00", "0999-12-31"]
)
def test_a_search_filter_out_of_the_years_in_utc_is_refused_in_french(since):
    with pytest.raises(ValidationError) as refused:
        search_filters_build(since=since)

    assert refused.value.message_dict == {"since": [DATE_RANGE_UTC_MESSAGE]}


def test_a_search_filter_at_the_first_moment_in_utc_is_taken():
    filters = search_filters_build(since="1000-01-01T05:00:00+05:00")

    assert filters is not None and filters.since.year == 1000
