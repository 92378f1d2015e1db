"""The error pages the owner may meet are French (Django's own are English)."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.views import defaults

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who", ["anonymous", "staff"])
def test_an_unknown_address_answers_the_french_404_page(client, staff_client, who):
    response = (staff_client if who == "staff" else client).get("/inexistant/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "Page introuvable" in page and '<html lang="fr">' in page
    assert "Not Found" not in page and "requested resource" not in page


def test_a_missing_fact_on_memory_is_the_french_404_page(staff_client):
    response = staff_client.get("/memory/facts/inconnu/")
    assert response.status_code == 404
    assert "Page introuvable" in response.content.decode()


def test_the_500_page_is_french_and_needs_no_request_context():
    response = defaults.server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    page = response.content.decode()
    assert "Erreur du serveur" in page and '<html lang="fr">' in page
    assert "Server Error" not in page


@pytest.mark.parametrize(
    ("view", "title"),
    [(defaults.bad_request, "Requête invalide"), (defaults.permission_denied, "Accès refusé")],
)
def test_the_400_and_403_pages_are_french(rf, view, title):
    from django.contrib.auth.models import AnonymousUser

    request = rf.get("/")
    request.user = AnonymousUser()
    response = view(request, exception=Exception())
    assert title in response.content.decode()
