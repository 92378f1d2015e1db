"""Login lockout (django-axes) and API throttling (DRF), with French messages.

The test settings switch API throttling off (rates None) so that the rest of
the suite never meets a 429; these tests turn it on with tiny rates and a
cleared cache. Login lockout stays on everywhere: its counts live in the test
database, rolled back after each test.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import time_machine
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

from makilab.exception_handlers import THROTTLED_MESSAGE
from makilab.throttling import LOGIN_LOCKED_MESSAGE

pytestmark = pytest.mark.django_db

PASSWORD = "mot-de-passe-solide"  # the staff_user fixture's
ROOT = Path(__file__).resolve().parent.parent


def _logged_in(client: Client) -> bool:
    return client.get("/memory/").status_code == 200


@pytest.mark.parametrize("login_url", ["/login/", "/admin/login/"])
def test_thirty_wrong_passwords_then_the_right_one_does_not_get_in(
    client, staff_user, settings, login_url
):
    limit = settings.AXES_FAILURE_LIMIT
    for attempt in range(30):
        response = client.post(login_url, {"username": "owner", "password": f"faux-{attempt}"})
        expected = 429 if attempt + 1 >= limit else 200
        assert response.status_code == expected, attempt
    response = client.post(login_url, {"username": "owner", "password": PASSWORD})
    assert response.status_code == 429
    html = response.content.decode()
    assert LOGIN_LOCKED_MESSAGE.format(minutes=15) in html
    assert '<html lang="fr"' in html
    assert not _logged_in(client)


def test_the_lockout_ends_after_the_cool_off(client, staff_user, settings):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "owner", "password": f"faux-{attempt}"})
    assert client.post("/login/", {"username": "owner", "password": PASSWORD}).status_code == 429
    later = timezone.now() + settings.AXES_COOLOFF_TIME + dt.timedelta(seconds=1)
    with time_machine.travel(later, tick=False):
        response = client.post("/login/", {"username": "owner", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/memory/"


def test_the_owner_unlocks_early_with_the_command_readme_names(client, staff_user, settings):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "owner", "password": f"faux-{attempt}"})
    assert client.post("/login/", {"username": "owner", "password": PASSWORD}).status_code == 429
    call_command("axes_reset_username", "owner", stdout=io.StringIO())
    assert client.post("/login/", {"username": "owner", "password": PASSWORD}).status_code == 302


def test_a_few_typos_then_the_right_password_get_in_and_reset_the_count(
    client, staff_user, settings
):
    for _round in range(2):
        for attempt in range(settings.AXES_FAILURE_LIMIT - 1):
            response = client.post("/login/", {"username": "owner", "password": f"faux-{attempt}"})
            assert response.status_code == 200
        response = client.post("/login/", {"username": "owner", "password": PASSWORD})
        assert response.status_code == 302
        client.post("/logout/")


def test_the_lock_holds_the_account_from_every_address_and_only_that_account(
    staff_user, django_user_model, settings
):
    """Locked per username: a guesser changing addresses is still locked (see settings)."""
    django_user_model.objects.create_user(username="autre", password=PASSWORD, is_staff=True)
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        Client(REMOTE_ADDR=f"203.0.113.{attempt}").post(
            "/login/", {"username": "owner", "password": "faux"}
        )
    elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    assert elsewhere.post("/login/", {"username": "owner", "password": PASSWORD}).status_code == 429
    other = elsewhere.post("/login/", {"username": "autre", "password": PASSWORD})
    assert other.status_code == 302


def test_one_address_trying_many_usernames_is_locked(staff_user, settings):
    guesser = Client(REMOTE_ADDR="203.0.113.9")
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        guesser.post("/login/", {"username": f"nom-{attempt}", "password": "faux"})
    assert guesser.post("/login/", {"username": "owner", "password": PASSWORD}).status_code == 429
    assert Client().post("/login/", {"username": "owner", "password": PASSWORD}).status_code == 302


def test_login_lockout_settings_are_on_by_default(settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == ["username", "ip_address"]
    assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"


# --- API throttling ------------------------------------------------------------


@pytest.fixture
def api_rates(settings):
    """Turn DRF throttling on with the given rates, on an empty cache."""

    def set_rates(**rates: str | None) -> None:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
        cache.clear()

    yield set_rates
    cache.clear()


@pytest.fixture
def token(django_user_model) -> str:
    agent = django_user_model.objects.create_user(username="agent", password=None)
    return Token.objects.create(user=agent).key


def test_the_api_answers_429_in_french_past_the_users_rate(api_rates, token, staff_user):
    api_rates(user="3/minute", anon=None, chat=None)
    agent = Client(HTTP_AUTHORIZATION=f"Token {token}")
    assert [agent.get("/api/memory/facts").status_code for _ in range(3)] == [200] * 3
    refused = agent.get("/api/memory/facts")
    assert refused.status_code == 429
    wait = int(refused["Retry-After"])
    assert 0 < wait <= 60
    assert refused.json() == {"message": THROTTLED_MESSAGE.format(wait=wait), "extra": {}}
    # Per user: the owner's session has its own budget.
    owner = Client()
    owner.force_login(staff_user)
    assert owner.get("/api/memory/facts").status_code == 200
    # A minute later the agent is served again.
    with time_machine.travel(timezone.now() + dt.timedelta(seconds=61), tick=False):
        assert agent.get("/api/memory/facts").status_code == 200


def test_chat_has_its_own_tighter_rate(api_rates, token):
    api_rates(user="100/minute", anon=None, chat="1/minute")
    agent = Client(HTTP_AUTHORIZATION=f"Token {token}")
    # The throttle counts a call before the view runs: an invalid one is enough (400).
    first = agent.post("/api/agent/chat", {}, content_type="application/json")
    assert first.status_code == 400
    body = {"channel": "api", "message": "Bonjour"}
    second = agent.post("/api/agent/chat", body, content_type="application/json")
    assert second.status_code == 429
    assert second.json()["message"].startswith("Trop de requêtes")
    # Other endpoints still answer: the chat scope is counted apart.
    assert agent.get("/api/memory/facts").status_code == 200


def test_a_rate_of_none_turns_a_throttle_off(api_rates, token):
    api_rates(user=None, anon=None, chat=None)
    agent = Client(HTTP_AUTHORIZATION=f"Token {token}")
    assert {agent.get("/api/memory/facts").status_code for _ in range(20)} == {200}


def test_api_rates_come_from_the_environment_and_the_tests_turn_them_off(settings, tmp_path):
    assert set(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].values()) == {None}
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps(settings.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']))"
    )

    def rates(**env: str) -> dict:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("MAKILAB_")}
        environ |= {"DJANGO_SETTINGS_MODULE": "makilab.settings", "MAKILAB_DATA_DIR": str(tmp_path)}
        (tmp_path / "empty.env").touch()
        environ |= {"MAKILAB_ENV_FILE": str(tmp_path / "empty.env"), **env}
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    assert rates() == {"user": "600/minute", "anon": "60/minute", "chat": "30/minute"}
    assert rates(MAKILAB_API_RATE="100/hour", MAKILAB_API_CHAT_RATE="none") == {
        "user": "100/hour",
        "anon": "60/minute",
        "chat": None,
    }
