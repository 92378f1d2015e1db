"""A JSON object that names a field twice is refused: which value was meant is not known.

json.loads keeps the last one, so ``{"value": "a", "value": "b"}`` stored "b" without a word.
"""

from __future__ import annotations

import pytest

from memory.api.parsers import JSON_DUPLICATE_KEY_REASON, JSON_INVALID_MESSAGE
from memory.models import Fact

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"


def _post(client, body: str):
    return client.generic("POST", FACTS, body, content_type="application/json")


def test_a_body_naming_a_field_twice_is_refused_in_french(agent_api):
    response = _post(agent_api, '{"key": "k1", "value": "a", "value": "b"}')

    assert response.status_code == 400
    reason = JSON_DUPLICATE_KEY_REASON.format(key="value")
    assert response.json() == {"message": JSON_INVALID_MESSAGE.format(reason=reason), "extra": {}}
    assert not Fact.objects.exists()


def test_a_key_repeated_in_a_nested_object_is_refused_too(agent_api):
    body = '{"messages": [{"channel": "a", "channel": "b", "content": "x"}]}'

    response = agent_api.generic(
        "POST", "/api/v1/memory/messages", body, content_type="application/json"
    )

    assert response.status_code == 400
    assert "channel" in response.json()["message"]


def test_the_same_key_in_two_different_objects_still_passes(agent_api):
    body = '{"messages": [{"channel": "a", "content": "x"}, {"channel": "a", "content": "y"}]}'

    response = agent_api.generic(
        "POST", "/api/v1/memory/messages", body, content_type="application/json"
    )

    assert response.status_code == 201, response.content
