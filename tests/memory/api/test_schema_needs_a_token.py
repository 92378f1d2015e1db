"""The OpenAPI schema answers a caller without credentials 401, as the API does (with the
header that says how to authenticate), not 403. (Its docs page sends a person to the
login page.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_without_credentials_the_schema_is_a_401_saying_how_to_authenticate(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
