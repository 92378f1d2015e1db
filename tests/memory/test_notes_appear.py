"""A note that appears in the vault folder is found at once, not after the cache's lifetime."""

from __future__ import annotations

import os

import pytest

from memory.services.notes import context_notes_get
from tests.memory.test_notes_service import (
    age,
    configure,
    notes_fresh_cache,
    paths,
    vault,
    write,
)

pytestmark = pytest.mark.django_db

__all__ = ["notes_fresh_cache", "vault"]  # fixtures, used by name


def test_a_fixed_note_created_after_a_miss_is_found_on_the_next_call(vault):
    write(vault, "Profil.md", "Profil")
    configure(obsidian_context_notes=["Profil.md", "Nouvelle.md"], obsidian_context_tag="")
    first = context_notes_get()
    assert "Nouvelle.md" in first.failures

    write(vault, "Nouvelle.md", "Écrite après coup")
    second = context_notes_get()

    assert paths(second) == [("Profil.md", "fixed"), ("Nouvelle.md", "fixed")]
    assert second.failures == {}


def test_a_tagged_note_added_in_a_subfolder_is_found_on_the_next_call(vault):
    write(vault, "Projets/Ancien.md", "Ancien #makilab")
    configure(obsidian_context_notes=[], obsidian_context_tag="makilab")
    assert paths(context_notes_get()) == [("Projets/Ancien.md", "tag")]

    write(vault, "Projets/Nouveau.md", "Nouveau #makilab")

    assert paths(context_notes_get()) == [
        ("Projets/Ancien.md", "tag"),
        ("Projets/Nouveau.md", "tag"),
    ]


def test_an_unchanged_vault_is_still_served_from_the_cache(vault):
    note = write(vault, "Profil.md", "Version 1")
    stamp = age(note)
    configure(obsidian_context_notes=["Profil.md"], obsidian_context_tag="")
    context_notes_get()
    note.write_text("Version 2", encoding="utf-8")  # same folder listing
    os.utime(note, ns=stamp)  # and the note's own size and mtime as they were

    assert context_notes_get().notes[0].content == "Version 1"
