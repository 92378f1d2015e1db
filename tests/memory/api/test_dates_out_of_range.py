"""A date at the edge of the calendar is bad input: a French 400, never a 500."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

EDGES = ["0001-01-01", "0001-01-01T00:00:00", "9999-12-31T23:59:59-05:00"]


@pytest.fixture
def api(agent_user):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=agent_user).key}")
    return client


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize("param", ["since", "until"])
def test_a_search_between_dates_out_of_range_is_a_french_400(api, param, edge):
    response = api.get("/api/memory/search", {"q": "vélo", "mode": "text", param: edge})
    assert response.status_code == 400, response.content
    assert "Date hors de l'intervalle" in response.content.decode()


@pytest.mark.parametrize("edge", EDGES)
def test_a_message_dated_out_of_range_is_a_french_400(api, edge):
    response = api.post(
        "/api/memory/messages",
        {"channel": "whatsapp", "role": "user", "content": "x", "timestamp": edge},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "Date hors de l'intervalle" in response.content.decode()


@pytest.mark.parametrize("edge", ["0001-01-01", "9999-12-31"])  # the page's fields take dates
@pytest.mark.parametrize("param", ["since", "until"])
def test_the_search_page_says_the_date_is_out_of_range(staff_user, client, param, edge):
    client.raise_request_exception = False
    client.force_login(staff_user)
    response = client.get("/memory/search/", {"q": "vélo", "mode": "text", param: edge}, **HTMX)
    assert response.status_code < 500
    assert "Date hors de l" in response.content.decode()


@pytest.mark.parametrize(
    "date",
    [
        "2026-02-30T10:00:00Z",
        "2026-13-45",
        "2026-04-31",
        "2026-01-01T25:00",
        "2026-01-01T10:00+25:00",
    ],
)
def test_a_date_of_the_right_form_that_does_not_exist_says_so(api, owner_api, date):
    """Black-box QA: « 2026-02-30T10:00:00Z » was told it had the wrong format, which it has
    not: the day is not in the calendar."""
    search = api.get("/api/memory/search", {"q": "vélo", "mode": "text", "since": date})
    message = api.post(
        "/api/memory/messages",
        {"channel": "whatsapp", "role": "user", "content": "x", "timestamp": date},
        format="json",
    )

    export = owner_api.get("/api/memory/export", {"since": date})  # its own parser (portability)

    for response in (search, message, export):
        assert response.status_code == 400, response.content
        assert f"La date « {date} » n'existe pas" in response.content.decode()
