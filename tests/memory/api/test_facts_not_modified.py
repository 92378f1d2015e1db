"""GET /facts/<key> with If-None-Match (RFC 9110 §13.1.2): 304 when the client's copy is
the current version, so a client polling a fact re-reads nothing that did not change."""

from __future__ import annotations

import pytest

from memory.api.conditional import IF_NONE_MATCH_MALFORMED_MESSAGE
from memory.models import Actor
from memory.services.facts import fact_store, fact_update

pytestmark = pytest.mark.django_db

CITY = "/api/memory/facts/ville"


@pytest.fixture
def ville():
    fact, _ = fact_store(key="ville", value="Lyon", actor=Actor.USER)
    return fact


def test_the_current_tag_is_304_without_a_body_and_with_the_tag(owner_api, ville):
    tag = owner_api.get(CITY).headers["ETag"]

    response = owner_api.get(CITY, HTTP_IF_NONE_MATCH=tag)

    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["ETag"] == tag


@pytest.mark.parametrize(
    "header",
    ['"0001-01-01", {tag}', "W/{tag}", "*", '  {tag} , "x"'],
    ids=["among-others", "weak-form", "star", "spaces"],
)
def test_any_matching_form_is_304(owner_api, ville, header):
    tag = owner_api.get(CITY).headers["ETag"]

    response = owner_api.get(CITY, HTTP_IF_NONE_MATCH=header.format(tag=tag))

    assert response.status_code == 304


def test_a_changed_fact_is_read_again_whole(owner_api, ville):
    tag = owner_api.get(CITY).headers["ETag"]
    fact_update(fact=ville, actor=Actor.USER, value="Grenoble")

    response = owner_api.get(CITY, HTTP_IF_NONE_MATCH=tag)

    assert response.status_code == 200
    assert response.json()["value"] == "Grenoble"
    assert response.headers["ETag"] != tag


def test_a_malformed_header_is_a_french_400(owner_api, ville):
    response = owner_api.get(CITY, HTTP_IF_NONE_MATCH="pas une étiquette")

    assert response.status_code == 400
    assert response.json()["message"] == IF_NONE_MATCH_MALFORMED_MESSAGE


def test_a_missing_fact_is_404_whatever_the_header(owner_api):
    response = owner_api.get("/api/memory/facts/inconnu", HTTP_IF_NONE_MATCH="*")

    assert response.status_code == 404
