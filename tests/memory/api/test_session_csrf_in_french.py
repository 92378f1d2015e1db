"""The owner's session on the API without its CSRF token is refused in French (QA: DRF's
« CSRF Failed: CSRF token missing. »), as the pages' own CSRF failure is."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(staff_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    client.get("/memory/")  # the csrftoken cookie, as the page sets it
    return client


@pytest.mark.parametrize("token", [None, "faux-jeton-de-32-caracteres-xxxxx"])
def test_a_write_without_the_sessions_csrf_token_is_refused_in_french(session, token):
    headers = {} if token is None else {"HTTP_X_CSRFTOKEN": token}
    response = session.post(
        "/api/memory/facts",
        {"key": "velo", "value": "bleu"},
        content_type="application/json",
        **headers,
    )
    assert response.status_code == 403
    message = response.json()["message"]
    assert "CSRF Failed" not in message and "missing" not in message, message
    assert "jeton CSRF" in message and "X-CSRFToken" in message


def test_with_its_token_the_session_writes(session):
    token = session.cookies["csrftoken"].value
    response = session.post(
        "/api/memory/facts",
        {"key": "velo", "value": "bleu"},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 201, response.content
