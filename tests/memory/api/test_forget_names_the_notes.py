"""A forget's preview names the context notes that speak of its topic.

QA: with a note tagged #makilab about « clafoutis », forgetting « clafoutis » said
« Rien dans la mémoire ne parle de « clafoutis » » and the note kept being injected:
the vault is the owner's (a forget never changes it), so the preview says which
notes still bring the topic into the prompt, and where to change that.
"""

from __future__ import annotations

import pytest

from memory.services.forgetting import topic_forget_preview

pytestmark = pytest.mark.django_db

NOTE = "Desserts/Clafoutis.md"


@pytest.fixture
def vault(vector_store, local_embedder, settings, tmp_path):
    from memory.services.notes import notes_cache_clear

    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault" / "Desserts").mkdir(parents=True)
    (tmp_path / "vault" / NOTE).write_text(
        "#makilab\n# Recette du clafoutis\nCerises, œufs, lait : le clafoutis de grand-mère.\n"
    )
    (tmp_path / "vault" / "Velo.md").write_text("#makilab\nRévision du vélo en mars.\n")
    (tmp_path / "vault" / "Brouillon.md").write_text("Un clafoutis sans tag.\n")
    notes_cache_clear()
    yield tmp_path / "vault"
    notes_cache_clear()


def test_the_preview_names_the_context_notes_about_the_topic(vault):
    plan = topic_forget_preview(topic="clafoutis")

    assert plan.empty  # nothing in the memory itself
    assert plan.notes == [NOTE]  # a context note; the untagged draft is never injected
    assert NOTE in plan.as_text(owner=True) and NOTE in plan.as_text()
    assert "Obsidian" in plan.as_text()
    assert plan.as_dict()["notes"] == [NOTE]


def test_the_api_dry_run_and_the_page_name_them(vault, owner_api, staff_client):
    answer = owner_api.post(
        "/api/v1/memory/forget", {"topic": "clafoutis", "dry_run": True}, format="json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["notes"] == [NOTE]

    from django.urls import reverse

    page = staff_client.post(reverse("dashboard:forget-preview"), {"topic": "clafoutis"})
    assert page.status_code == 200
    assert NOTE in page.content.decode()


def test_a_topic_no_note_speaks_of_names_none(vault):
    assert topic_forget_preview(topic="tarte aux pommes").notes == []


def test_a_note_speaking_of_it_past_its_head_is_named(vault):
    """A message about the topic receives the passage speaking of it, wherever it is in the
    note (notes_relevance.note_passage): past the note's head too."""
    from memory.services.notes import notes_cache_clear

    (vault / "Journal.md").write_text("#makilab\n" + "Rien de spécial. " * 100 + "Un flan.\n")
    notes_cache_clear()

    assert topic_forget_preview(topic="flan").notes == ["Journal.md"]


def test_notes_that_cannot_be_read_are_said_so(vault, settings):
    """Review: with the notes' source down, the preview said « Rien à oublier » as if no
    note spoke of it."""
    import socket

    from memory.services.notes import notes_cache_clear

    with socket.socket() as closed:  # a port nothing listens on: Obsidian is not running
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings.OBSIDIAN_API_URL = f"http://127.0.0.1:{port}"
    settings.OBSIDIAN_API_KEY = "k"
    notes_cache_clear()

    plan = topic_forget_preview(topic="clafoutis")

    assert plan.notes == [] and plan.notes_unread
    assert "n'ont pas pu être lues" in plan.as_text(owner=True)


def test_a_note_found_is_named_even_when_other_notes_could_not_be_read():
    """Review: a fixed note read, the tagged ones not: the preview said only that notes
    could not be read, and dropped the one it had found."""
    from memory.services.forgetting_plan import ForgetPlan

    plan = ForgetPlan(topic="clafoutis", selection="words", notes=[NOTE], notes_unread=True)

    assert NOTE in plan.as_text(owner=True)
    assert "n'ont pas pu être lues" in plan.as_text(owner=True)
    assert plan.as_dict()["notes_unread"] is True
