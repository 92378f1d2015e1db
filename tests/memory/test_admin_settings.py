"""The settings row edited in the Django admin follows the rule of every settings write:
it changes only the fields changed on the page, validated by memory_settings_update."""

import json

import pytest
from django.urls import reverse

from memory.models import MemorySettings
from memory.services.notes import MSG_TAG_INVALID
from memory.services.settings import memory_settings_update
from memory.stores.notes import MSG_PATH_PARENT
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def url():
    return reverse("admin:memory_memorysettings_change", args=[MemorySettings.load().pk])


def _opened(staff_client, url) -> dict[str, str]:
    """What the admin page posts as it was opened, its hidden initial-* inputs included."""
    return form_post_data(staff_client.get(url).content.decode(), "memorysettings_form")


@pytest.mark.parametrize(
    ("field", "value", "stored"),
    [
        ("obsidian_context_tag", "#projets", "projets"),
        (
            "obsidian_context_notes",
            json.dumps(["Profil", "./Projets//Makilab"]),
            ["Profil.md", "Projets/Makilab.md"],
        ),
    ],
)
def test_the_admin_stores_context_notes_and_tag_normalised_as_the_api_does(
    staff_client, url, field, value, stored
):
    data = _opened(staff_client, url)
    data[field] = value
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert getattr(MemorySettings.load(), field) == stored


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("obsidian_context_tag", "un tag avec espaces", MSG_TAG_INVALID),
        ("obsidian_context_notes", json.dumps(["../../etc/passwd"]), MSG_PATH_PARENT),
        # One path on its own, not in a list: refused, not read letter by letter.
        ("obsidian_context_notes", json.dumps("Profil"), None),
    ],
)
def test_the_admin_refuses_context_notes_and_tag_the_api_refuses(
    staff_client, url, field, value, message
):
    before = getattr(MemorySettings.load(), field)
    data = _opened(staff_client, url)
    data[field] = value
    response = staff_client.post(url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors
    if message:
        assert any(message in error for error in errors[field]), errors[field]
    assert getattr(MemorySettings.load(), field) == before


def test_an_admin_save_keeps_a_knob_changed_elsewhere_since_the_page_opened(staff_client, url):
    data = _opened(staff_client, url)  # the owner opens the admin page...
    memory_settings_update(changes={"max_results": 9, "obsidian_context_tag": "projets"})
    data["min_score"] = "0.6"  # ... and changes only the score there
    response = staff_client.post(url, data)
    assert response.status_code == 302
    row = MemorySettings.load()
    assert row.min_score == 0.6
    assert (row.max_results, row.obsidian_context_tag) == (9, "projets")


def test_an_admin_save_records_only_the_fields_changed_on_the_page(staff_client, url):
    data = _opened(staff_client, url)
    data["history_length"] = "30"
    data.pop("auto_retrieve_enabled")  # the toggle unchecked
    staff_client.post(url, data)
    row = MemorySettings.load()
    assert (row.history_length, row.auto_retrieve_enabled) == (30, False)
    history = staff_client.get(reverse("admin:memory_memorysettings_history", args=[row.pk]))
    change = history.context["action_list"][0].get_change_message()
    assert change == "Modification de Auto-retrieval activé et Longueur de l'historique."
