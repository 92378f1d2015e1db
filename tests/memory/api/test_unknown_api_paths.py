"""An address under /api/ that matches no route answers the API's JSON 404 in French;
a page that does not exist keeps the site's HTML 404."""

from __future__ import annotations

import pytest

from makilab.exception_handlers import API_NOT_FOUND_MESSAGE

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/memory/facts/a%2Fb",
        "/api/v1/memory/forgettings/abc/restore",
        "/api/v1/nothing-here",
        "/api/memory/nothing-here",
        "/api/",
        "/mcp/nothing-here",
    ],
)
def test_an_unknown_api_path_is_a_json_404_in_the_apis_shape(agent_api, path):
    response = agent_api.get(path)

    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"message": API_NOT_FOUND_MESSAGE, "extra": {}}


def test_an_unknown_api_path_is_a_json_404_for_any_method(agent_api):
    response = agent_api.post("/api/v1/memory/nothing-here", {"a": "b"}, format="json")

    assert response.status_code == 404
    assert response.json()["message"] == API_NOT_FOUND_MESSAGE


def test_an_unknown_page_keeps_the_sites_html_404(staff_client):
    response = staff_client.get("/nothing-here/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_fact_never_stored_is_still_the_views_own_404(agent_api):
    response = agent_api.get("/api/v1/memory/facts/never-stored")

    assert response.status_code == 404
    assert response.json()["message"] != API_NOT_FOUND_MESSAGE
