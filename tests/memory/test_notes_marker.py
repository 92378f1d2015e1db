"""The vault folder's change marker (read before every message's context notes):
it lists only the folders whose mtime moved, and still sees every note that
appears or leaves, two within one tick of the file system's clock included."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from memory.stores import notes_vault
from memory.stores.notes_vault import VaultFolderProvider
from tests.memory.test_notes_stores import vault, write
from tests.stateful import stateful_settings

__all__ = ["vault"]  # fixture, used by name


def _age(root: Path, seconds: float = 60) -> None:
    """Every folder of the vault last changed ``seconds`` ago."""
    past = time.time() - seconds
    for dirpath, _dirs, _files in os.walk(root):
        os.utime(dirpath, (past, past))


@pytest.fixture
def listed(monkeypatch) -> list[str]:
    """The folders listed (os.scandir, which os.walk uses too) from now on."""
    calls: list[str] = []
    real = os.scandir

    def spy(path="."):
        calls.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    return calls


def _vault_of(vault: Path) -> VaultFolderProvider:
    for folder in range(3):
        for note in range(4):
            write(vault, f"Dossier {folder}/Sous/Note {note}.md", "texte")
            write(vault, f"Dossier {folder}/Note {note}.md", "texte")
    write(vault, ".obsidian/workspace.json", "{}")
    _age(vault)
    return VaultFolderProvider(vault)


def test_folders_whose_mtime_did_not_move_are_not_listed_again(vault, listed):
    provider = _vault_of(vault)
    first = provider.change_marker()
    assert len(first) == 7  # the vault, 3 folders, 3 sub-folders (not .obsidian)
    listed.clear()

    assert provider.change_marker() == first
    assert listed == []


def test_a_note_added_or_removed_in_a_sub_folder_changes_the_marker(vault, listed):
    provider = _vault_of(vault)
    before = provider.change_marker()
    write(vault, "Dossier 1/Sous/Nouvelle.md", "nouvelle")
    listed.clear()

    added = provider.change_marker()
    assert added != before
    assert listed == [str(vault / "Dossier 1" / "Sous")]  # the one folder that changed

    (vault / "Dossier 1/Sous/Nouvelle.md").unlink()
    assert provider.change_marker() != added


def test_a_second_note_within_the_tick_of_the_first_is_seen_later(vault, monkeypatch):
    """The first note and a marker read in the same tick, then a second note that
    leaves the folder's mtime as the first set it: a marker read seconds later still
    sees it (the listing, taken within the tick, is not kept)."""
    provider = _vault_of(vault)
    folder = vault / "Dossier 2"
    write(vault, "Dossier 2/Premiere.md", "1")
    mtime = folder.stat().st_mtime_ns
    monkeypatch.setattr(notes_vault, "_now_ns", lambda: mtime)  # the same tick
    first = provider.change_marker()

    write(vault, "Dossier 2/Deuxieme.md", "2")
    os.utime(folder, ns=(mtime, mtime))  # the same tick: the folder's mtime did not move
    monkeypatch.setattr(notes_vault, "_now_ns", lambda: mtime + 10 * 10**9)

    second = provider.change_marker()
    assert second != first
    assert provider.change_marker() == second


def test_a_new_sub_folder_and_a_hidden_one(vault):
    provider = _vault_of(vault)
    before = provider.change_marker()
    write(vault, ".obsidian/plugins/data.json", "{}")
    assert provider.change_marker() == before  # hidden folders are not walked

    write(vault, "Dossier 0/Sous/Plus bas/Note.md", "texte")
    after = provider.change_marker()
    assert len(after) == len(before) + 1 and after != before


# The machines' clock: the vault's mtimes and the provider's now (notes_vault._now_ns).
CLOCK = [0]


class MarkerMachine(RuleBasedStateMachine):
    """Notes and folders appear and leave while a clock of its own ticks: every change
    sets its folder's mtime to the clock, so two changes between two ticks share one
    mtime, as on a file system whose clock is coarse. Every marker read with its
    listings kept is the one read afresh (a provider with none): no kept listing
    ever hides a change."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="makilab-marker-"))
        CLOCK[0] = time.time_ns() - 3600 * 10**9
        self._touch(self.root)
        self.folders = [self.root]
        self.notes: list[Path] = []
        self.kept = VaultFolderProvider(self.root)
        self.kept.change_marker()

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @staticmethod
    def _touch(path: Path) -> None:
        os.utime(path, ns=(CLOCK[0], CLOCK[0]))

    @rule(folder=st.integers(0, 50), name=st.sampled_from(["a.md", "b.md", "c.txt", ".cache"]))
    def note_added(self, folder: int, name: str) -> None:
        parent = self.folders[folder % len(self.folders)]
        if not (parent / name).exists():
            (parent / name).write_text("x", encoding="utf-8")
            self.notes.append(parent / name)
            self._touch(parent)

    @rule(index=st.integers(0, 50))
    def note_removed(self, index: int) -> None:
        if self.notes:
            note = self.notes.pop(index % len(self.notes))
            note.unlink()
            self._touch(note.parent)

    @rule(parent=st.integers(0, 50), name=st.sampled_from(["Projets", "Sous", ".trash"]))
    def folder_added(self, parent: int, name: str) -> None:
        path = self.folders[parent % len(self.folders)] / name
        if not path.exists():
            path.mkdir()
            self._touch(path)
            self._touch(path.parent)
            if not any(part.startswith(".") for part in path.relative_to(self.root).parts):
                self.folders.append(path)

    @rule(step=st.sampled_from([10**6, 10**9, 5 * 10**9]))
    def clock_ticks(self, step: int) -> None:
        CLOCK[0] += step

    @rule()
    def marker_read(self) -> None:
        """Each read (never after every step: a read refreshes what it keeps) is the
        marker read afresh."""
        assert self.kept.change_marker() == VaultFolderProvider(self.root).change_marker()


def test_kept_listings_never_hide_a_change(monkeypatch):
    monkeypatch.setattr(notes_vault, "_now_ns", lambda: CLOCK[0])
    run_state_machine_as_test(MarkerMachine, settings=stateful_settings(examples=200, steps=30))
