"""A number of a JSON body is a JSON number: the text « 0.5 » is as wrong there as the
number 5 where text is expected (refused: StrictCharField). A query string or a form
carries every value as text, so there the digits are read.

Black-box QA: `{"importance": "0.5"}` created a fact and `PATCH /settings
{"max_results": "5"}` saved, where `{"value": 5}` was refused."""

from __future__ import annotations

import pytest

from memory.api.fields import NUMBER_EXPECTED
from memory.models import Fact, MemorySettings

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("importance", ["0.5", "1", " 0.5 "])
def test_a_number_in_quotes_is_refused_in_a_json_body(owner_api, importance):
    response = owner_api.post(
        "/api/v1/memory/facts",
        {"key": "velo", "value": "Le vélo est gris", "importance": importance},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"] == {"importance": [NUMBER_EXPECTED]}
    assert not Fact.objects.exists()


@pytest.mark.parametrize(("field", "value"), [("max_results", "5"), ("min_score", "0.4")])
def test_a_setting_in_quotes_is_refused(owner_api, field, value):
    before = getattr(MemorySettings.load(), field)

    response = owner_api.patch("/api/v1/memory/settings", {field: value}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["extra"]["fields"] == {field: [NUMBER_EXPECTED]}
    assert getattr(MemorySettings.load(), field) == before


def test_json_numbers_and_a_forms_digits_still_pass(owner_api):
    assert (
        owner_api.post(
            "/api/v1/memory/facts",
            {"key": "velo", "value": "Le vélo est gris", "importance": 0.5},
            format="json",
        ).status_code
        == 201
    )
    response = owner_api.post(
        "/api/v1/memory/facts",
        "key=pain&value=Du+pain&importance=0.25",
        content_type="application/x-www-form-urlencoded",
    )  # a form: every value is text
    assert response.status_code == 201, response.content
    assert Fact.objects.get(key="pain").importance == 0.25
    assert owner_api.get("/api/v1/memory/search?q=velo&mode=text&limit=3").status_code == 200


def test_no_serializer_of_the_api_reads_a_loose_number():
    """Every number a client writes, on every input serializer of the API, children of
    lists and dicts included, is strict."""
    from rest_framework import serializers

    from memory.api.fields import NumberNotText
    from tests.memory.api.input_fields import input_fields, input_serializer_count

    numbers = (serializers.IntegerField, serializers.FloatField, serializers.DecimalField)
    loose = [
        name
        for name, field in input_fields()
        if isinstance(field, numbers) and not isinstance(field, NumberNotText)
    ]
    assert loose == [], loose
    assert input_serializer_count() > 10  # the input serializers were read
