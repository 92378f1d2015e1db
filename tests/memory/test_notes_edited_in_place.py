"""A note saved in place (as Obsidian saves: its folder's listing does not change) is
read again at the next message, whatever the cache's lifetime; an unchanged vault is
still served from the cache."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.test import override_settings

from memory.models import MemorySettings
from memory.services.notes import MSG_NOTE_EMPTY, context_notes_get, notes_cache_clear
from memory.stores.notes_vault import VaultFolderProvider
from tests.dashboard.conftest import vault

pytestmark = pytest.mark.django_db

__all__ = ["vault"]  # fixture, used by name

TAGGED = "Projets/Makilab.md"


@pytest.fixture(autouse=True)
def _cache_of_a_minute():
    notes_cache_clear()
    with override_settings(OBSIDIAN_CACHE_SECONDS=60):
        yield
    notes_cache_clear()


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The notes read from the vault folder from now on."""
    calls: list[str] = []
    real = VaultFolderProvider.read

    def spy(self, path):
        calls.append(path)
        return real(self, path)

    monkeypatch.setattr(VaultFolderProvider, "read", spy)
    return calls


def aged(root: Path) -> Path:
    """Every file and folder of the vault last changed a minute ago: a note saved
    within the last 2 s is always read again, so a test of the cache needs older ones."""
    past = time.time_ns() - 60 * 10**9
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(dirpath, name), ns=(past, past))
        os.utime(dirpath, ns=(past, past))
    return root


def fixed_notes(paths: list[str], tag: str = "makilab") -> None:
    MemorySettings.objects.update_or_create(
        pk=MemorySettings.SINGLETON_ID,
        defaults={"obsidian_context_notes": paths, "obsidian_context_tag": tag},
    )


def paths_of(result) -> list[str]:
    return [note.path for note in result.notes]


def test_a_note_edited_to_drop_its_tag_is_no_longer_injected(vault):
    aged(vault)
    assert TAGGED in paths_of(context_notes_get())

    (vault / TAGGED).write_text("Le projet Makilab, plus de tag ici.\n", encoding="utf-8")

    assert TAGGED not in paths_of(context_notes_get())


def test_a_note_saved_twice_within_a_clock_tick_is_read_again(vault):
    """A second save within one tick of the file system's clock, of the same size,
    leaves mtime and size as they were: a note saved under 2 s ago is never trusted."""
    fixed_notes(["Profil.md"], tag="")
    note = vault / "Profil.md"
    before = os.stat(note)
    context_notes_get()
    note.write_text(note.read_text(encoding="utf-8").replace("Lyon", "Metz"), encoding="utf-8")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))

    assert context_notes_get().notes[0].content.endswith("vit à Metz.")


def test_a_tag_taken_off_within_a_clock_tick_is_no_longer_injected(vault):
    """The same for the vault's tag index (QA 6): a tag taken off by a save of the same
    size within the tick of the save before kept the note injected, at every message,
    until it changed again."""
    note = vault / TAGGED
    note.write_text("Marie : projet secret. #makilab\n", encoding="utf-8")
    before = os.stat(note)
    assert TAGGED in paths_of(context_notes_get())

    note.write_text("Marie : projet secret. #autres!\n", encoding="utf-8")
    assert os.stat(note).st_size == before.st_size
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))

    assert TAGGED not in paths_of(context_notes_get())


def test_a_fixed_note_edited_in_place_is_read_again(vault, reads):
    fixed_notes(["Profil.md"])
    aged(vault)
    context_notes_get()
    (vault / "Profil.md").write_text("Mickael, grimpeur, vit à Annecy.\n", encoding="utf-8")

    result = context_notes_get()

    assert result.notes[0].content == "Mickael, grimpeur, vit à Annecy."
    assert reads == ["Profil.md", "Profil.md"]


def test_an_unchanged_vault_is_served_from_the_cache_without_reading(vault, reads):
    fixed_notes(["Profil.md"])
    aged(vault)
    first = context_notes_get()

    second = context_notes_get()

    assert paths_of(second) == paths_of(first) == ["Profil.md", TAGGED]
    assert reads == ["Profil.md"]


def test_a_fixed_note_appearing_in_a_hidden_folder_is_found_on_the_next_call(vault):
    """The change marker does not walk hidden folders; the fixed paths' own stamps do."""
    (vault / ".prive").mkdir()
    fixed_notes(["Profil.md", ".prive/Santé.md"], tag="")
    aged(vault)
    assert ".prive/Santé.md" in context_notes_get().failures

    (vault / ".prive" / "Santé.md").write_text("Allergie aux noix.", encoding="utf-8")
    result = context_notes_get()

    assert paths_of(result) == ["Profil.md", ".prive/Santé.md"]
    assert result.failures == {}


def test_an_empty_note_is_not_injected(vault):
    (vault / "Vide.md").write_text("---\ntags: [makilab]\n---\n", encoding="utf-8")
    (vault / "Blanc.md").write_text("  \n", encoding="utf-8")
    fixed_notes(["Profil.md", "Blanc.md"])

    result = context_notes_get(use_cache=False)

    assert paths_of(result) == ["Profil.md", TAGGED]
    assert result.failures == {"Blanc.md": MSG_NOTE_EMPTY.format(path="Blanc.md")}
