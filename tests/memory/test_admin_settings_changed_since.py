"""The admin's settings page changes a setting over the value it opened with, as /memory's
sliders and the admin's fact form do: a setting stored since by another writer (/memory,
the API, another tab) and changed on the page too is refused, said with the value stored
now, nothing saved; the form then opens on that value, so saving again takes the owner's."""

from __future__ import annotations

import json
from html import unescape

import pytest
from django.urls import reverse
from django.utils.text import capfirst

from memory.admin_forms import SETTING_CHANGED_SINCE_MESSAGE
from memory.models import MemorySettings
from memory.services.settings import memory_settings_update
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def url():
    return reverse("admin:memory_memorysettings_change", args=[MemorySettings.load().pk])


def _opened(staff_client, url) -> dict[str, str]:
    """What the admin page posts as it was opened, its hidden initial-* inputs included."""
    return form_post_data(staff_client.get(url).content.decode(), "memorysettings_form")


def _errors(response) -> dict:
    return response.context["adminform"].form.errors


def test_a_setting_changed_elsewhere_and_on_the_page_is_refused_with_its_stored_value(
    staff_client, url
):
    data = _opened(staff_client, url)
    memory_settings_update(changes={"max_results": 9})  # /memory's slider, meanwhile
    data["max_results"] = "5"

    response = staff_client.post(url, data)

    assert response.status_code == 200
    assert MemorySettings.load().max_results == 9
    said = " ".join(_errors(response)["max_results"])
    label = capfirst(MemorySettings._meta.get_field("max_results").verbose_name)
    assert said == SETTING_CHANGED_SINCE_MESSAGE.format(label=label, value="9")
    assert "9" in said


def test_saving_the_refused_form_again_takes_the_owners_value(staff_client, url):
    data = _opened(staff_client, url)
    memory_settings_update(changes={"max_results": 9})
    data["max_results"] = "5"
    refused = staff_client.post(url, data)
    again = form_post_data(unescape(refused.content.decode()), "memorysettings_form")
    assert again["initial-max_results"] == "9"  # the stored value, as its opening one
    assert again["max_results"] == "5"  # the owner's still in the field

    response = staff_client.post(url, again)

    assert response.status_code == 302, _errors(response)
    assert MemorySettings.load().max_results == 5


def test_a_context_note_added_elsewhere_is_not_dropped_by_a_page_opened_before(staff_client, url):
    memory_settings_update(changes={"obsidian_context_notes": ["Profil.md"]})
    data = _opened(staff_client, url)
    memory_settings_update(changes={"obsidian_context_notes": ["Profil.md", "Projets/A.md"]})
    data["obsidian_context_notes"] = json.dumps(["Profil.md", "Journal.md"])

    response = staff_client.post(url, data)

    assert response.status_code == 200
    assert MemorySettings.load().obsidian_context_notes == ["Profil.md", "Projets/A.md"]
    said = " ".join(_errors(response)["obsidian_context_notes"])
    assert "Projets/A.md" in said


def test_a_setting_changed_elsewhere_to_the_pages_new_value_is_saved(staff_client, url):
    """Both writers asked for the same value: nothing of the other is lost."""
    data = _opened(staff_client, url)
    memory_settings_update(changes={"max_results": 9})
    data["max_results"] = "9"
    data["history_length"] = "30"

    response = staff_client.post(url, data)

    assert response.status_code == 302, _errors(response)
    row = MemorySettings.load()
    assert (row.max_results, row.history_length) == (9, 30)


def test_a_post_without_its_opening_values_saves_as_it_always_did(staff_client, url):
    """A script or a page from before the hidden inputs: compared with the row as stored."""
    data = {k: v for k, v in _opened(staff_client, url).items() if not k.startswith("initial-")}
    memory_settings_update(changes={"max_results": 9})
    data["max_results"] = "5"

    response = staff_client.post(url, data)

    assert response.status_code == 302, _errors(response)
    assert MemorySettings.load().max_results == 5
