"""JSON true is not the number 1: every number the API reads refuses a boolean in French.

DRF's FloatField reads Python's bool as a number, so `"importance": true`
stored a fact of importance 1.0 (and `false` 0.0) where any other value that is not a
number is refused.
"""

from __future__ import annotations

import pytest

from memory.models import Fact

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("value", [True, False])
def test_a_fact_importance_given_as_a_boolean_is_refused(owner_api, value):
    response = owner_api.post(
        "/api/memory/facts",
        {"key": "vélo", "value": "un vélo rouge", "importance": value},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["importance"] == ["Un nombre valide est requis."]
    assert not Fact.objects.filter(key="vélo").exists()


def test_a_number_still_passes(owner_api):
    response = owner_api.post(
        "/api/memory/facts",
        {"key": "vélo", "value": "un vélo rouge", "importance": 1},
        format="json",
    )

    assert response.status_code == 201
    assert Fact.objects.get(key="vélo").importance == 1.0


@pytest.mark.parametrize("field", ["max_results", "min_score", "block_max_tokens"])
def test_a_setting_given_as_a_boolean_is_refused(owner_api, field):
    response = owner_api.patch("/api/memory/settings", {field: True}, format="json")

    assert response.status_code == 400
