"""The Notes Obsidian section: fixed notes, tag, toggle, preview (vault folder in tmp)."""

from __future__ import annotations

import sys

import pytest

from memory.models import MemorySettings
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

pytest.importorskip("memory.services.notes")


def test_the_section_lists_fixed_and_tagged_notes(staff_client, vault):
    MemorySettings.objects.update_or_create(
        pk=1, defaults={"obsidian_context_notes": ["Profil.md"]}
    )
    html = staff_client.get("/memory/notes/", **HTMX).content.decode()
    assert "<code>Profil.md</code>" in html
    assert "Projets/Makilab.md" in html
    assert ">fixe<" in html and ">taguée<" in html


def test_adding_a_fixed_note_normalises_its_path(staff_client, vault):
    response = staff_client.post("/memory/notes/add/", {"path": "Profil"}, **HTMX)
    assert response.status_code == 200
    assert "Note « <bdi>Profil</bdi> » ajoutée au contexte." in response.content.decode()
    assert MemorySettings.load().obsidian_context_notes == ["Profil.md"]


def test_an_unsafe_path_is_refused_with_422(staff_client, vault):
    response = staff_client.post("/memory/notes/add/", {"path": "../secret"}, **HTMX)
    assert response.status_code == 422
    assert '<ul class="errorlist"' in response.content.decode()
    assert MemorySettings.load().obsidian_context_notes == []


def test_removing_a_fixed_note(staff_client, vault):
    MemorySettings.objects.update_or_create(
        pk=1, defaults={"obsidian_context_notes": ["Profil.md"]}
    )
    html = staff_client.get("/memory/notes/", **HTMX).content.decode()
    assert 'hx-confirm="Retirer « &#x2068;Profil.md&#x2069; » des notes de contexte ?"' in html
    response = staff_client.post("/memory/notes/remove/", {"path": "Profil.md"}, **HTMX)
    assert "retirée du contexte" in response.content.decode()
    assert MemorySettings.load().obsidian_context_notes == []


def test_the_tag_is_cleaned_and_saved(staff_client, vault):
    response = staff_client.post("/memory/notes/tag/", {"tag": "#Sport"}, **HTMX)
    assert "Tag enregistré : #Sport." in response.content.decode()
    assert MemorySettings.load().obsidian_context_tag == "Sport"
    response = staff_client.post("/memory/notes/tag/", {"tag": "deux mots"}, **HTMX)
    assert response.status_code == 422
    assert "Tag invalide" in response.content.decode()
    assert MemorySettings.load().obsidian_context_tag == "Sport"


def test_the_toggle_switches_notes_off_and_on(staff_client, vault):
    response = staff_client.post("/memory/notes/toggle/", {}, **HTMX)
    assert "Notes Obsidian désactivées." in response.content.decode()
    assert MemorySettings.load().obsidian_context_enabled is False
    staff_client.post("/memory/notes/toggle/", {"obsidian_context_enabled": "on"}, **HTMX)
    assert MemorySettings.load().obsidian_context_enabled is True


def test_the_preview_shows_the_whole_note(staff_client, vault):
    response = staff_client.get("/memory/notes/preview/", {"path": "Profil.md"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Mickael, grimpeur, vit à Lyon." in html
    assert "<html" not in html


def test_the_preview_of_a_missing_note_says_so(staff_client, vault):
    response = staff_client.get("/memory/notes/preview/", {"path": "Absente.md"}, **HTMX)
    assert response.status_code == 200
    assert 'class="alert"' in response.content.decode()
    assert "Absente.md" in response.content.decode()


def test_without_the_notes_module_the_section_says_unavailable(staff_client, monkeypatch):
    monkeypatch.setitem(sys.modules, "memory.services.notes", None)
    html = staff_client.get("/memory/notes/", **HTMX).content.decode()
    assert "Notes Obsidian indisponibles" in html
    response = staff_client.post("/memory/notes/add/", {"path": "Profil"}, **HTMX)
    assert response.status_code == 422
    assert "Notes Obsidian indisponibles" in response.content.decode()


def test_the_section_says_which_folder_the_notes_are_read_from(staff_client, vault):
    html = staff_client.get("/memory/notes/", **HTMX).content.decode()
    assert f"Notes lues depuis le dossier <code>{vault}</code>" in html
    page = staff_client.get("/memory/").content.decode()
    assert f"<code>{vault}</code>" in page


def test_the_section_names_the_obsidian_api_when_notes_come_from_it(staff_client, settings):
    settings.OBSIDIAN_API_URL = "https://127.0.0.1:9/"
    settings.OBSIDIAN_API_KEY = "cle"
    settings.OBSIDIAN_TIMEOUT_S = 0.5
    html = staff_client.get("/memory/notes/", **HTMX).content.decode()
    assert "Notes lues depuis l&#x27;API Obsidian <code>https://127.0.0.1:9/</code>" in html


@pytest.mark.parametrize("path", ["../secret_key", "/etc/passwd"])
def test_the_preview_of_a_path_out_of_the_vault_is_refused_as_bad_input(staff_client, vault, path):
    """QA: a refused path answered 200 (the French reason inside) while an empty path or a
    NUL character answered 422: a path the vault refuses is bad input too."""
    response = staff_client.get("/memory/notes/preview/", {"path": path}, **HTMX)
    assert response.status_code == 422
    assert 'class="alert"' in response.content.decode()


def test_removing_a_note_that_was_not_there_says_so(staff_client, vault):
    """QA: « nope.md », never in the context, was « retirée du contexte »."""
    MemorySettings.objects.update_or_create(
        pk=1, defaults={"obsidian_context_notes": ["Profil.md"]}
    )
    response = staff_client.post("/memory/notes/remove/", {"path": "nope.md"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "retirée du contexte" not in html
    assert "était pas dans le contexte" in html
    assert MemorySettings.load().obsidian_context_notes == ["Profil.md"]


def test_adding_a_note_already_in_the_context_says_so(staff_client, vault):
    """QA: « Profil.md » after « Profil » (the same note) was « ajoutée au contexte »."""
    staff_client.post("/memory/notes/add/", {"path": "Profil"}, **HTMX)
    again = staff_client.post("/memory/notes/add/", {"path": "Profil.md"}, **HTMX)
    html = again.content.decode()
    assert "ajoutée au contexte" not in html and "est déjà dans le contexte" in html
    assert MemorySettings.load().obsidian_context_notes == ["Profil.md"]
