"""The fixed context notes follow the notes' path rule wherever they are written: the
API, /memory and the admin accept any path note_path_normalize accepts (up to 500
characters) and refuse, in the notes' words, what leaves the vault."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from memory.models import MemorySettings
from memory.models.settings import MAX_FIXED_NOTES, MSG_TOO_MANY_NOTES
from memory.stores.notes import MSG_PATH_ABSOLUTE, MSG_PATH_PARENT
from tests.dashboard.conftest import HTMX, vault

pytestmark = pytest.mark.django_db

__all__ = ["vault"]  # fixture, used by name

# A vault path of ordinary depth, over 100 characters (the notes allow 500).
DEEP_PATH = (
    "Projets/2025/Makilab - agent personnel/Contexte et préférences/"
    "Profil détaillé de Mickaël (santé, sport, travail).md"
)


def test_the_api_accepts_a_context_note_path_over_100_characters(owner_api):
    assert 100 < len(DEEP_PATH) < 500

    response = owner_api.patch(
        "/api/memory/settings", {"obsidian_context_notes": [DEEP_PATH]}, format="json"
    )

    assert response.status_code == 200, response.content.decode()
    assert MemorySettings.load().obsidian_context_notes == [DEEP_PATH]


def test_the_memory_page_adds_a_context_note_path_over_100_characters(staff_client, vault):
    response = staff_client.post("/memory/notes/add/", {"path": DEEP_PATH}, **HTMX)

    assert response.status_code == 200, response.content.decode()
    assert "sujet" not in response.content.decode()
    assert MemorySettings.load().obsidian_context_notes == [DEEP_PATH]


def test_the_model_refuses_too_many_context_notes_in_the_notes_words():
    memory_settings = MemorySettings.load()
    memory_settings.obsidian_context_notes = [f"N{i}.md" for i in range(MAX_FIXED_NOTES + 1)]

    with pytest.raises(ValidationError) as excinfo:
        memory_settings.full_clean()

    assert excinfo.value.message_dict["obsidian_context_notes"] == [MSG_TOO_MANY_NOTES]


LEAVING_THE_VAULT = pytest.mark.parametrize(
    ("bad", "reason"),
    [("../../etc/passwd", MSG_PATH_PARENT), ("/etc/passwd", MSG_PATH_ABSOLUTE)],
    ids=["parent", "absolute"],
)


@LEAVING_THE_VAULT
def test_the_model_refuses_a_context_note_path_leaving_the_vault(bad, reason):
    """The rule the admin, the API and /memory all run (Model.full_clean)."""
    memory_settings = MemorySettings.load()
    memory_settings.obsidian_context_notes = ["Profil.md", bad]

    with pytest.raises(ValidationError) as excinfo:
        memory_settings.full_clean()

    assert excinfo.value.message_dict["obsidian_context_notes"] == [f"{bad} : {reason}"]


@LEAVING_THE_VAULT
def test_the_admin_refuses_a_context_note_path_leaving_the_vault(staff_client, bad, reason):
    MemorySettings.load()
    url = reverse("admin:memory_memorysettings_change", args=[MemorySettings.SINGLETON_ID])
    form = staff_client.get(url).context["adminform"].form
    data = {name: form.initial.get(name) for name in form.fields}
    data = {name: ("" if value is None else value) for name, value in data.items()}
    data.update(
        obsidian_context_notes=f'["{bad}"]',
        auto_retrieve_enabled="on",
        obsidian_context_enabled="on",
    )

    response = staff_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["obsidian_context_notes"]
    assert any(bad in error and reason in error for error in errors), errors
    assert MemorySettings.load().obsidian_context_notes == []
