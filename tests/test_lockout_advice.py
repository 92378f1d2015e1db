"""The login lock-out page says why it locks and gives a command that really unlocks.

The lock counts per username or per address (settings.AXES_LOCKOUT_PARAMETERS):
wrong passwords typed for another name from the owner's address lock the owner
out too, and only an address reset (or a full reset) lets them in.
"""

from __future__ import annotations

import html
import io
import re
import shlex

import pytest
from django.core.management import call_command
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "mot-de-passe-solide"  # the staff_user fixture's
COMMAND = re.compile(r"<code>python manage\.py ([^<]+)</code>")


def _locked_page_for_the_owner_after_guesses_on_another_name(settings) -> str:
    client = Client(REMOTE_ADDR="127.0.0.1")
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": "victim", "password": f"faux-{attempt}"})
    response = client.post("/login/", {"username": "owner", "password": PASSWORD})
    assert response.status_code == 429
    return response.content.decode()


def test_the_page_says_the_attempts_came_from_this_address_or_for_this_account(
    staff_user, settings
):
    page = _locked_page_for_the_owner_after_guesses_on_another_name(settings)
    assert "depuis cette adresse" in page and "pour ce compte" in page
    assert "ce compte est bloqué" not in page


def test_the_page_gives_a_command_that_unlocks_the_owner_locked_by_an_address(staff_user, settings):
    page = _locked_page_for_the_owner_after_guesses_on_another_name(settings)
    commands = [
        shlex.split(html.unescape(found)) for found in COMMAND.findall(page) if "&lt;" not in found
    ]
    assert ["axes_reset_ip", "127.0.0.1"] in commands
    for name, *args in commands:
        call_command(name, *args, stdout=io.StringIO())
        response = Client(REMOTE_ADDR="127.0.0.1").post(
            "/login/", {"username": "owner", "password": PASSWORD}
        )
        assert response.status_code == 302, name
        for attempt in range(settings.AXES_FAILURE_LIMIT):
            Client(REMOTE_ADDR="127.0.0.1").post(
                "/login/", {"username": "victim", "password": f"faux-{attempt}"}
            )


def test_the_page_still_names_the_per_account_reset(staff_user, settings):
    page = _locked_page_for_the_owner_after_guesses_on_another_name(settings)
    assert "axes_reset_username &lt;nom&gt;" in page
