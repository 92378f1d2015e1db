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
        # An endpoint without a query of its own: a paged list's page parameters and format.
        "/api/v1/memory/forgettings?page=1&page_size=5&format=json",
        "/api/v1/memory/channels?page=1",
        "/api/v1/memory/facts/velo/revisions?page=1&page_size=2",
        "/api/v1/memory/stats?format=json",
        "/api/v1/memory/facts/velo?format=json",
        "/api/v1/memory/export?format=json",  # QA: refused here alone
    ],
)
def test_the_parameters_each_endpoint_reads_still_pass(owner_api, url):
    fact_store(key="velo", value="Le vélo est gris")

    assert owner_api.get(url).status_code == 200


def _forgotten_velo() -> bool:
    from memory.models import Fact

    return not Fact.objects.filter(key="velo", forgotten=False).exists()


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        # QA: the dry run asked in the address was a real forget, « velo » gone.
        ("post", "/api/v1/memory/forget?dry_run=true", {"topic": "vélo"}),
        ("post", "/api/v1/memory/facts?dry_run=1", {"key": "velo", "value": "Un vélo bleu"}),
        ("delete", "/api/v1/memory/facts/velo?hard=1", None),
        ("post", "/api/v1/memory/context?x=1", {"message": "mon vélo", "channel": "whatsapp"}),
        ("patch", "/api/v1/memory/settings?dry=1", {"max_results": 3}),
    ],
)
def test_a_write_refuses_a_query_parameter_it_does_not_read_and_writes_nothing(
    owner_api, method, url, body
):
    fact_store(key="velo", value="Le vélo est gris")

    response = getattr(owner_api, method)(url, body, format="json")

    assert response.status_code == 400, response.content
    fields = response.json()["extra"]["fields"]
    assert list(fields.values()) == [[UNKNOWN_FIELD_MESSAGE]], fields
    assert not _forgotten_velo()
    from memory.models import Fact, MemorySettings

    assert Fact.objects.get(key="velo").value == "Le vélo est gris"
    assert MemorySettings.load().max_results != 3


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/memory/stats?x=1",
        "/api/v1/memory/settings?x=1",
        "/api/v1/memory/forgettings?x=1",
        "/api/v1/memory/channels?x=1",
        "/api/v1/memory/facts/velo?x=1",
        "/api/v1/memory/facts/velo/revisions?x=1",
    ],
)
def test_a_read_refuses_a_query_parameter_it_does_not_read(owner_api, url):
    fact_store(key="velo", value="Le vélo est gris")

    response = owner_api.get(url)

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"] == {"x": [UNKNOWN_FIELD_MESSAGE]}


@pytest.mark.parametrize("page", ["abc", "1.5", "deux"])
def test_a_page_that_is_no_whole_number_is_a_400_not_a_missing_page(owner_api, page):
    """QA: `?page=abc` answered 404 « Page non valide. », as if the list were shorter; a page
    past the last (or page 0) is still the documented 404."""
    from memory.api.pagination import PAGE_SIZE_MESSAGE

    response = owner_api.get(f"/api/v1/memory/facts?page={page}")

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"] == {"page": [PAGE_SIZE_MESSAGE]}
    assert owner_api.get("/api/v1/memory/facts?page=999").status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/memory/search?q=lait&q=pain&mode=text",
        "/api/v1/memory/facts?search=velo&search=lait",
        "/api/v1/memory/retrievals?page=1&page=2",
    ],
)
def test_a_parameter_given_twice_is_refused(owner_api, url):
    """QA: `q=lait&q=pain` searched « pain » without a word; which one the client meant is
    not known (a JSON body naming a field twice is refused too)."""
    from memory.api.views import PARAMETER_TWICE_MESSAGE

    response = owner_api.get(url)

    assert response.status_code == 400, response.content
    assert list(response.json()["extra"]["fields"].values()) == [[PARAMETER_TWICE_MESSAGE]]


@pytest.mark.parametrize(
    "url", ["/api/v1/memory/search?q=velo&mode=text", "/api/v1/memory/facts?page=1"]
)
def test_a_head_request_reads_the_query_its_get_reads(owner_api, url):
    """Review: HEAD (monitors, curl -I) answered 400 where GET answered 200."""
    assert owner_api.head(url).status_code == 200


@pytest.mark.parametrize("method", ["put", "delete", "patch"])
def test_a_method_the_endpoint_lacks_is_a_405_whatever_its_query(owner_api, method):
    """QA: `PUT /search?q=a` answered 400 « q : Champ inconnu » where a method the
    endpoint does not have is a 405 on every other one."""
    response = getattr(owner_api, method)("/api/v1/memory/search?q=a&q=b", {}, format="json")

    assert response.status_code == 405, response.content
    assert "non autorisée" in response.content.decode()


def test_options_says_what_the_endpoint_takes_whatever_its_query(owner_api):
    """Review: `OPTIONS /search?q=a` answered 400 « q : Champ inconnu »."""
    response = owner_api.options("/api/v1/memory/search?q=a")

    assert response.status_code == 200, response.content
