"""QA3: adding a context note that is already fixed says it was added.

Notes Obsidian › « Chemin de la note » › « Profil » (stored as « Profil.md »), then
« Profil.md » again: the second answer is « Note « Profil.md » ajoutée au
contexte. » although nothing changed (context_note_add is a no-op for a note
already there). The owner is told of an addition that did not happen.
"""

import pytest

from memory.selectors import memory_settings_get
from tests.dashboard.conftest import HTMX, vault  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def test_a_note_already_in_the_context_is_not_announced_as_added(staff_client, vault):
    staff_client.post("/memory/notes/add/", {"path": "Profil"}, **HTMX)
    assert memory_settings_get().obsidian_context_notes == ["Profil.md"]

    again = staff_client.post("/memory/notes/add/", {"path": "Profil.md"}, **HTMX)

    assert memory_settings_get().obsidian_context_notes == ["Profil.md"]
    assert "ajoutée au contexte" not in again.content.decode()
