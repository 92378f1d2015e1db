"""DRF's own error texts reach the client in French, whatever language the client asks for.

The owner's pages and the API are written in French; a browser or an HTTP
library that sends ``Accept-Language: en`` must not switch half of them to
English (DRF and Django translate their messages per request).
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client, RequestFactory
from django.utils import translation
from rest_framework.authtoken.models import Token

from memory.api.parsers import JSON_INVALID_AT_MESSAGE

pytestmark = pytest.mark.django_db

ACCEPT_LANGUAGES = [None, "en-US,en;q=0.9", "de"]


def _client(accept_language: str | None, **headers: str) -> Client:
    if accept_language:
        headers["HTTP_ACCEPT_LANGUAGE"] = accept_language
    return Client(**headers)


@pytest.fixture
def token(django_user_model) -> str:
    agent = django_user_model.objects.create_user(username="agent", password=None)
    return Token.objects.create(user=agent).key


@pytest.mark.parametrize("accept_language", ACCEPT_LANGUAGES)
def test_drf_error_messages_are_french(token, accept_language):
    anonymous = _client(accept_language)
    bad_token = _client(accept_language, HTTP_AUTHORIZATION="Token " + "0" * 40)
    agent = _client(accept_language, HTTP_AUTHORIZATION=f"Token {token}")
    cases = [
        (anonymous.get("/api/memory/facts"), 401, "Informations d'authentification non fournies."),
        (bad_token.get("/api/memory/facts"), 401, "Token non valide."),
        (agent.get("/api/memory/retrievals?page=999"), 404, "Page non valide."),
        (agent.put("/api/memory/settings"), 405, "Méthode «\xa0PUT\xa0» non autorisée."),
        (
            agent.post("/api/memory/facts", "a=b", content_type="text/plain"),
            415,
            "Type de média «\xa0text/plain\xa0» non supporté.",
        ),
        (
            agent.get("/api/memory/facts", HTTP_ACCEPT="application/xml"),
            406,
            "L'en-tête « Accept » n'a pas pu être satisfaite.",
        ),
        (
            agent.post("/api/memory/facts", "{", content_type="application/json"),
            400,
            JSON_INVALID_AT_MESSAGE.format(line=1, column=2),
        ),
    ]
    for response, status, message in cases:
        assert response.status_code == status, response.content
        assert response.json() == {"message": message, "extra": {}}


def test_the_interface_language_is_the_only_language_offered():
    """Django and DRF pick the request's language among LANGUAGES: only one is offered."""
    assert [code for code, _name in settings.LANGUAGES] == [settings.LANGUAGE_CODE]
    request = RequestFactory().get("/", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9")
    assert translation.get_language_from_request(request) == settings.LANGUAGE_CODE


def test_the_admin_login_page_is_french_for_an_english_browser():
    response = _client("en-US,en;q=0.9").get("/admin/login/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="fr"' in html
    assert "Mot de passe" in html
    assert "Password" not in html
