"""POST /api/v1/memory/digest reads its body: a malformed one is the API's French 400, and
no digest is asked for."""

from __future__ import annotations

import pytest

from memory.api.parsers import JSON_INVALID_AT_MESSAGE
from memory.api.serializers import UNKNOWN_FIELD_MESSAGE

pytestmark = pytest.mark.django_db

URL = "/api/v1/memory/digest"


def test_a_malformed_json_body_is_a_french_400_and_no_digest_is_asked(owner_api):
    response = owner_api.generic("POST", URL, "{x", content_type="application/json")

    assert response.status_code == 400
    reason = "nom de champ entre guillemets attendu"
    message = JSON_INVALID_AT_MESSAGE.format(reason=reason, line=1, column=2)
    assert response.json() == {"message": message, "extra": {}}
    assert owner_api.get(URL).json()["pending"] is False


def test_an_unknown_field_is_refused_like_everywhere_else(owner_api):
    response = owner_api.post(URL, {"zz": 1}, format="json")

    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {"zz": [UNKNOWN_FIELD_MESSAGE]}
    assert owner_api.get(URL).json()["pending"] is False


@pytest.mark.parametrize("body", [None, {}])
def test_no_body_or_an_empty_object_still_asks_for_a_digest(owner_api, body):
    response = owner_api.post(URL, body, format="json" if body is not None else None)

    assert response.status_code == 202, response.content
    assert response.json()["pending"] is True
