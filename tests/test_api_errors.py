"""DRF's own error texts reach the client in French, whatever language the client asks for.

The owner's pages and the API are written in French; a browser or an HTTP
library that sends ``Accept-Language: en`` must not switch half of them to
English (DRF and Django translate their messages per request).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from django.conf import settings
from django.test import Client, RequestFactory
from django.utils import translation
from rest_framework import serializers
from rest_framework.authtoken.models import Token

from makilab.exception_handlers import VALIDATION_MESSAGE
from memory.api.fields import FLOAT_OVERFLOW_MESSAGE, FrenchFloatField
from memory.api.parsers import JSON_INVALID_AT_MESSAGE
from memory.error_reasons import REASON_JSON_TRUNCATED
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db

ACCEPT_LANGUAGES = [None, "en-US,en;q=0.9", "de"]
HUGE_INTEGER = "1" + "0" * 400  # a valid JSON number, past a float's range


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
        (agent.get("/api/memory/facts?page=999"), 404, "Page non valide."),
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
            JSON_INVALID_AT_MESSAGE.format(reason=REASON_JSON_TRUNCATED, line=1, column=2),
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


@pytest.mark.parametrize("sign", ["", "-"], ids=["positive", "negative"])
@pytest.mark.parametrize(
    "who, method, path, body",
    [
        (
            "agent",
            "post",
            "/api/v1/memory/facts",
            '{"key": "velo", "value": "v", "importance": %s}',
        ),
        ("agent", "patch", "/api/v1/memory/facts/velo", '{"importance": %s}'),
        ("owner", "patch", "/api/v1/memory/settings", '{"min_score": %s}'),
        ("owner", "patch", "/api/v1/memory/settings", '{"search_min_score": %s}'),
    ],
    ids=["post-fact", "patch-fact", "min-score", "search-min-score"],
)
def test_a_number_too_large_for_a_float_is_a_french_400(
    token, staff_client, who, method, path, body, sign
):
    """DRF's FloatField said "Integer value too large to convert to float", untranslated."""
    fact_store(key="velo", value="Un Btwin gris", actor="agent")
    client = staff_client if who == "owner" else _client(None, HTTP_AUTHORIZATION=f"Token {token}")

    response = getattr(client, method)(
        path, body % (sign + HUGE_INTEGER), content_type="application/json"
    )

    assert response.status_code == 400, response.content
    field = body.split('"')[-2]
    assert response.json() == {
        "message": VALIDATION_MESSAGE,
        "extra": {"fields": {field: [FLOAT_OVERFLOW_MESSAGE]}},
    }


def _api_serializers() -> list[type[serializers.Serializer]]:
    found = []
    for package in ("memory.api", "agent.api"):
        for module_info in pkgutil.iter_modules(importlib.import_module(package).__path__):
            module = importlib.import_module(f"{package}.{module_info.name}")
            for _name, cls in inspect.getmembers(module, inspect.isclass):
                if not issubclass(cls, serializers.Serializer) or cls.__module__ != module.__name__:
                    continue
                if issubclass(cls, serializers.ModelSerializer) and not hasattr(cls, "Meta"):
                    continue  # a base class (ApiModelSerializer), not a serializer of a model
                found.append(cls)
    return found


def _fields(field: serializers.Field):
    yield field
    if isinstance(field, serializers.ListSerializer):
        yield from _fields(field.child)
    elif isinstance(field, serializers.Serializer):
        for child in field.fields.values():
            yield from _fields(child)
    elif getattr(field, "child", None) is not None:  # ListField, DictField
        yield from _fields(field.child)


def test_every_float_of_the_api_serializers_says_its_errors_in_french():
    """One home for the French float: declared fields and those a ModelSerializer builds."""
    floats = [
        (cls.__name__, field.field_name, type(field))
        for cls in _api_serializers()
        for field in _fields(cls())
        if isinstance(field, serializers.FloatField)
    ]
    assert len(floats) >= 5  # importance, min_score, the scores, the timings
    assert [f for f in floats if not issubclass(f[2], FrenchFloatField)] == []

    with translation.override("en"):
        english = {key: str(text) for key, text in serializers.FloatField().error_messages.items()}
    with translation.override(settings.LANGUAGE_CODE):
        french = {key: str(text) for key, text in FrenchFloatField().error_messages.items()}
    assert english.keys() <= french.keys()  # DRF's own, and ours (a number in quotes)
    assert [key for key in french if french[key] == english.get(key)] == []
