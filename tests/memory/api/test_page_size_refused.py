"""A page size that is not a whole number of at least 1 is a French 400; DRF fell back to
the default page without a word (``page_size=0``, ``page_size=abc``). Past the maximum
the size stays capped (test_facts_api)."""

from __future__ import annotations

import pytest

from memory.api.pagination import PAGE_SIZE_MESSAGE
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/api/v1/memory/facts", "/api/v1/memory/retrievals"])
@pytest.mark.parametrize("size", ["0", "-3", "abc", "1.5", " "])
def test_a_page_size_that_is_no_whole_number_of_at_least_one_is_refused(owner_api, url, size):
    fact_store(key="sport", value="course à pied")
    response = owner_api.get(url, {"page_size": size})

    assert response.status_code == 400, response.content
    assert response.json()["extra"] == {"fields": {"page_size": [PAGE_SIZE_MESSAGE]}}


def test_a_good_page_size_still_pages(agent_api):
    for index in range(3):
        fact_store(key=f"fact_{index}", value=f"valeur {index}")
    body = agent_api.get("/api/v1/memory/facts", {"page_size": "2"}).json()
    assert (body["count"], len(body["results"]), bool(body["next"])) == (3, 2, True)


def test_an_empty_page_size_asks_for_the_default_page(agent_api):
    fact_store(key="sport", value="course à pied")
    response = agent_api.get("/api/v1/memory/facts", {"page_size": ""})
    assert (response.status_code, response.json()["count"]) == (200, 1)
