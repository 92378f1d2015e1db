"""agent_token: the agent's API token in one command, on a plain (non-staff) account."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("agent_token", *args, stdout=out)
    return out.getvalue()


def test_it_creates_a_plain_account_and_prints_its_token():
    printed = _run("gateway")
    user = get_user_model().objects.get(username="gateway")
    assert (user.is_staff, user.is_superuser, user.has_usable_password()) == (False, False, False)
    assert Token.objects.get(user=user).key in printed


def test_a_second_run_prints_the_same_token_and_creates_nothing():
    _run("gateway")
    first = Token.objects.get(user__username="gateway").key
    printed = _run("gateway")
    assert first in printed
    assert Token.objects.filter(user__username="gateway").count() == 1
    assert get_user_model().objects.filter(username="gateway").count() == 1


def test_the_token_opens_the_agents_scope_not_the_owners(client):
    _run("gateway")
    key = Token.objects.get(user__username="gateway").key
    headers = {"HTTP_AUTHORIZATION": f"Token {key}"}
    assert client.get("/api/v1/memory/recent-facts", **headers).status_code == 200
    assert client.get("/api/v1/memory/export", **headers).status_code == 403


def test_it_refuses_a_staff_account_whose_token_would_be_the_owners():
    get_user_model().objects.create_superuser("owner", password="x-long-pass-123")
    with pytest.raises(CommandError, match="administrateur"):
        _run("owner")
    assert not Token.objects.filter(user__username="owner").exists()


@pytest.mark.parametrize("name", ["", "   ", "a b", "x" * 151, "bad/name"])
def test_it_refuses_a_name_django_would_not_accept_in_french(name):
    with pytest.raises(CommandError, match="Nom de compte invalide"):
        _run(name)
    assert not get_user_model().objects.exists()


def test_it_refuses_an_inactive_account_whose_token_the_api_would_refuse():
    get_user_model().objects.create_user("gateway", is_active=False)
    with pytest.raises(CommandError, match="désactivé"):
        _run("gateway")
    assert not Token.objects.filter(user__username="gateway").exists()
