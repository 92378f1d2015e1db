"""CSRF: a session's unsafe request needs the token; htmx sends it in X-CSRFToken."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memory.models import Fact, MemorySettings
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict_client(staff_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    return client


def csrf_token(client) -> str:
    """The token the page puts in <body hx-headers>, as the browser would read it."""
    html = client.get("/memory/").content.decode()
    return re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', html).group(1)


def test_a_dashboard_post_without_the_token_is_refused(strict_client):
    response = strict_client.post(
        "/memory/facts/", {"key": "k", "value": "v", "memory_type": "fact"}, **HTMX
    )
    assert response.status_code == 403
    assert not Fact.objects.exists()


def test_a_dashboard_post_with_the_header_htmx_sends_is_accepted(strict_client):
    token = csrf_token(strict_client)
    response = strict_client.post(
        "/memory/facts/",
        {"key": "k", "value": "v", "memory_type": "fact"},
        HTTP_X_CSRFTOKEN=token,
        **HTMX,
    )
    assert response.status_code == 200
    assert Fact.objects.filter(key="k").exists()


def test_a_wrong_token_is_refused(strict_client):
    csrf_token(strict_client)
    response = strict_client.post(
        "/memory/retrieval/settings/",
        {"max_results": "9", "min_score": "0.5"},
        HTTP_X_CSRFTOKEN="x" * 64,
        **HTMX,
    )
    assert response.status_code == 403
    assert MemorySettings.load().max_results == 4


def test_forget_without_the_token_leaves_the_fact(strict_client):
    fact_store(key="k", value="v")
    assert strict_client.post("/memory/facts/k/forget/", **HTMX).status_code == 403
    assert Fact.objects.get(key="k").forgotten is False


def test_the_api_with_a_session_needs_the_token_too(staff_user):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(staff_user)
    response = client.patch("/api/memory/settings", {"max_results": 9}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["message"]
    assert MemorySettings.load().max_results == 4

    token = csrf_token(client)
    response = client.patch(
        "/api/memory/settings", {"max_results": 9}, format="json", HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200
    assert MemorySettings.load().max_results == 9


def test_the_agent_token_needs_no_csrf(django_user_model):
    from rest_framework.authtoken.models import Token

    agent = django_user_model.objects.create_user(username="agent")
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=agent).key}")
    response = client.post("/api/memory/facts", {"key": "k", "value": "v"}, format="json")
    assert response.status_code == 201


def test_the_login_form_needs_the_token(staff_user):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": "owner", "password": "mot-de-passe-solide"})
    assert response.status_code == 403
