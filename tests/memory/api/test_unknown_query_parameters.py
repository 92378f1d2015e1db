"""A query parameter the API does not read is a 400 naming it, as an unknown body field is.

Black-box QA: `GET /search?q=tomates&chanel=telegram` (a typo of `channel`) answered 200
with results from every channel, where MCP refused the same typo; a client reading the
answer could not tell its filter had been dropped."""

from __future__ import annotations

import pytest

from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/memory/search?q=tomates&mode=text&chanel=telegram",
        "/api/v1/memory/facts?serch=velo",
        "/api/v1/memory/recent-facts?limt=3",
        "/api/v1/memory/retrievals?chanel=whatsapp",
    ],
)
def test_an_unknown_query_parameter_is_refused_in_french(owner_api, url):
    response = owner_api.get(url)

    assert response.status_code == 400, response.content
    fields = response.json()["extra"]["fields"]
    assert list(fields.values()) == [[UNKNOWN_FIELD_MESSAGE]], fields


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/memory/facts?page=1&page_size=5&search=velo",
        "/api/v1/memory/retrievals?page=1&page_size=5",
        "/api/v1/memory/search?q=velo&mode=text&channel=whatsapp&limit=3",
        # DRF's renderer choice, read before any view (review: it became a 400).
        "/api/v1/memory/search?q=velo&mode=text&format=json",
        "/api/v1/memory/facts?format=json",
        "/api/v1/memory/recent-facts?format=json",
        "/api/v1/memory/retrievals?format=json&page=1",
    ],
)
def test_the_parameters_each_endpoint_reads_still_pass(owner_api, url):
    fact_store(key="velo", value="Le vélo est gris")

    assert owner_api.get(url).status_code == 200
