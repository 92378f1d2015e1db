"""The French login page: staff only; logout by POST."""

from __future__ import annotations

import pytest

from dashboard.forms import NOT_STAFF_MESSAGE

pytestmark = pytest.mark.django_db


def test_the_login_page_is_in_french(client):
    response = client.get("/login/")
    assert response.status_code == 200
    html = response.content.decode()
    for text in ("Connexion", "Nom d'utilisateur", "Mot de passe", "Se connecter"):
        assert text in html


def test_staff_logs_in_and_lands_on_the_memory_page(client, staff_user):
    response = client.post("/login/", {"username": "owner", "password": "mot-de-passe-solide"})
    assert response.status_code == 302
    assert response["Location"] == "/memory/"
    assert client.get("/memory/").status_code == 200


def test_login_goes_back_to_the_page_asked_for(client, staff_user):
    response = client.get("/costs/")
    assert response["Location"] == "/login/?next=/costs/"
    response = client.post(
        "/login/", {"username": "owner", "password": "mot-de-passe-solide", "next": "/costs/"}
    )
    assert response["Location"] == "/costs/"


def test_a_wrong_password_is_refused_in_french(client, staff_user):
    response = client.post("/login/", {"username": "owner", "password": "faux"})
    assert response.status_code == 200
    assert "Saisissez un nom d" in response.content.decode()


def test_a_non_staff_account_cannot_log_in(client, django_user_model):
    django_user_model.objects.create_user(username="invite", password="mot-de-passe-solide")
    response = client.post("/login/", {"username": "invite", "password": "mot-de-passe-solide"})
    assert response.status_code == 200
    assert NOT_STAFF_MESSAGE.replace("'", "&#x27;") in response.content.decode()


def test_a_non_staff_session_gets_a_french_403(client, django_user_model):
    user = django_user_model.objects.create_user(username="invite")
    client.force_login(user)
    response = client.get("/memory/")
    assert response.status_code == 403
    assert "Accès refusé" in response.content.decode()


def test_logout_is_a_post_and_ends_the_session(staff_client):
    assert staff_client.get("/logout/").status_code == 405
    response = staff_client.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert staff_client.get("/memory/").status_code == 302


def test_the_root_goes_to_the_memory_page(staff_client):
    response = staff_client.get("/")
    assert response["Location"] == "/memory/"
