"""A JSON body of ``null`` is refused in French, as any other body that is not an object.

DRF's serializers answer it with "No data provided", a text its translations lack."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from makilab.exception_handlers import VALIDATION_MESSAGE
from memory.api.messages import BODY_NOT_AN_OBJECT

pytestmark = pytest.mark.django_db

REFUSED = {
    "message": VALIDATION_MESSAGE,
    "extra": {"fields": {"non_field_errors": [BODY_NOT_AN_OBJECT]}},
}


@pytest.fixture
def clients(django_user_model, staff_user) -> dict[str, APIClient]:
    agent = django_user_model.objects.create_user(username="agent", password=None)
    token = APIClient()
    token.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=agent).key}")
    owner = APIClient()
    owner.force_authenticate(staff_user)
    return {"agent": token, "owner": owner}


@pytest.mark.parametrize(
    "who, method, path",
    [
        ("agent", "post", "/api/v1/agent/chat"),
        ("agent", "post", "/api/v1/agent/chat/stream"),
        ("agent", "post", "/api/v1/memory/facts"),
        ("agent", "post", "/api/v1/memory/forget"),
        ("agent", "post", "/api/v1/memory/preview"),
        ("agent", "post", "/api/v1/memory/context"),
        ("agent", "post", "/api/v1/memory/messages"),
        ("owner", "patch", "/api/v1/memory/settings"),
        ("owner", "post", "/api/agent/chat"),  # the unversioned alias
    ],
)
def test_a_null_body_gets_the_french_error_of_a_body_that_is_not_an_object(
    clients, who, method, path
):
    response = getattr(clients[who], method)(path, "null", content_type="application/json")
    assert response.status_code == 400
    assert response.json() == REFUSED
