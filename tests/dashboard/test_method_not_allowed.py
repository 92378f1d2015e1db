"""A wrong method on a /memory action gets a French 405 page, its Allow header kept (audit
12: Django's require_POST answered a blank page). The API's own 405s keep their body."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
@pytest.mark.parametrize(
    "url",
    [
        "/memory/forget/confirm/",
        "/memory/forget/preview/",
        "/memory/notes/add/",
        "/memory/retrieval/settings/",
    ],
)
def test_a_get_on_an_action_answers_a_french_405(staff_client, url, htmx):
    # A plain POST renders the page at the action's URL: a reload from the address bar GETs it.
    response = staff_client.get(url, **(HTMX if htmx else {}))
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert "Action non autorisée ici" in response.content.decode()
    assert "« GET »" in response.content.decode()


def test_a_put_on_the_facts_section_answers_a_french_405(staff_client):
    response = staff_client.put("/memory/facts/", **HTMX)
    assert response.status_code == 405
    assert response["Allow"] == "GET, POST"
    assert "« PUT »" in response.content.decode()


def test_the_apis_405_keeps_its_own_french_json(staff_user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff_user).key}")
    response = api.put("/api/v1/memory/search", {}, format="json")
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert "PUT" in json.dumps(response.json(), ensure_ascii=False)


def test_a_get_on_the_chats_send_url_leads_back_to_the_chat(staff_client):
    """QA: GET /chat/send/ said it takes « un formulaire de la page mémoire » and led back
    to /memory: the chat's own form posts there."""
    response = staff_client.get("/chat/send/")

    page = response.content.decode()
    assert response.status_code == 405
    assert "page mémoire" not in page
    assert 'href="/chat/"' in page
