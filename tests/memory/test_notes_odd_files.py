"""Odd files in a vault folder: symbolic link loops, named pipes, names too long and
files the system refuses. Each is one note refused with a French reason; the other
notes, the tag scan and the page go on."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from pathlib import Path

import pytest

from memory.error_reasons import OS_ERROR_REASONS, os_error_reason
from memory.exceptions import MemoryServiceError, NoteNotFound, UnsafeNotePath
from memory.models import MemorySettings
from memory.services.notes import context_notes_get, notes_cache_clear
from memory.stores import notes_vault
from memory.stores.notes import MSG_PATH_NAME_TOO_LONG, note_path_normalize
from memory.stores.notes_vault import REASON_NOT_A_FILE, VaultFolderProvider
from tests.dashboard.conftest import HTMX, vault

pytestmark = pytest.mark.django_db

__all__ = ["vault"]  # fixture, used by name

LOOP_REASON = OS_ERROR_REASONS[errno.ELOOP]


def fixed_notes(paths: list[str]) -> None:
    MemorySettings.objects.update_or_create(
        pk=MemorySettings.SINGLETON_ID, defaults={"obsidian_context_notes": paths}
    )


@pytest.fixture(autouse=True)
def _fresh_notes_cache():
    notes_cache_clear()
    yield
    notes_cache_clear()


@pytest.fixture
def loop(vault):
    """Boucle1.md -> Boucle2.md -> Boucle1.md, beside the vault's two notes."""
    os.symlink("Boucle2.md", vault / "Boucle1.md")
    os.symlink("Boucle1.md", vault / "Boucle2.md")
    return vault


# --- Symbolic link loops ---------------------------------------------------------------


def test_a_fixed_note_in_a_symlink_loop_is_one_failure_the_other_notes_stay(loop):
    fixed_notes(["Profil.md", "Boucle1.md"])

    result = context_notes_get(use_cache=False)

    assert [n.path for n in result.notes] == ["Profil.md", "Projets/Makilab.md"], result.failures
    assert LOOP_REASON in result.failures["Boucle1.md"]


def test_a_stray_symlink_loop_in_the_vault_does_not_stop_the_tag_scan(loop):
    fixed_notes(["Profil.md"])

    result = context_notes_get(use_cache=False)

    assert [n.path for n in result.notes] == ["Profil.md", "Projets/Makilab.md"], result.failures
    assert result.failures == {}


def test_the_preview_of_a_note_in_a_symlink_loop_says_why_in_french(staff_client, loop):
    staff_client.raise_request_exception = False

    response = staff_client.get("/memory/notes/preview/", {"path": "Boucle1.md"}, **HTMX)

    assert response.status_code == 200
    assert LOOP_REASON in response.content.decode()


# --- Names too long, system errors ----------------------------------------------------


def test_a_name_longer_than_the_file_systems_allow_is_refused_as_a_path():
    with pytest.raises(UnsafeNotePath, match=MSG_PATH_NAME_TOO_LONG):
        note_path_normalize("a" * 300)
    # 255 bytes is the limit, not 255 characters: "é" is two.
    with pytest.raises(UnsafeNotePath):
        note_path_normalize("Dossier/" + "é" * 127 + ".md")
    assert note_path_normalize("é" * 126 + ".md") == "é" * 126 + ".md"


def test_the_preview_of_a_too_long_file_name_is_in_french(staff_client, vault):
    response = staff_client.get("/memory/notes/preview/", {"path": "a" * 300}, **HTMX)

    html = response.content.decode()
    assert MSG_PATH_NAME_TOO_LONG in html
    assert "File name too long" not in html


def test_a_file_the_system_refuses_is_reported_in_french(vault, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(notes_vault.os, "open", refused)

    with pytest.raises(NoteNotFound) as excinfo:
        VaultFolderProvider(vault).read("Profil.md")

    assert OS_ERROR_REASONS[errno.EACCES] in str(excinfo.value)
    assert "Permission denied" not in str(excinfo.value)


def test_an_os_error_without_a_french_reason_names_its_number():
    assert (
        os_error_reason(OSError(errno.EDOM, "Math argument")) == f"erreur système n° {errno.EDOM}"
    )


# --- Named pipes -------------------------------------------------------------------------


def unblocked(pipe: Path, call):
    """call()'s outcome (its value or its MemoryServiceError); fails if it blocks on
    `pipe`, after releasing it (opening and closing the writer's end)."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call()
        except MemoryServiceError as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():
        with contextlib.suppress(OSError):  # ENXIO: nobody reads it after all
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5)
        pytest.fail(f"reading the named pipe {pipe.name} blocked")
    return outcome


def test_a_named_pipe_named_like_a_note_is_refused_without_blocking(vault):
    os.mkfifo(vault / "Tuyau.md")

    outcome = unblocked(vault / "Tuyau.md", lambda: VaultFolderProvider(vault).read("Tuyau.md"))

    assert isinstance(outcome.get("error"), NoteNotFound)
    assert REASON_NOT_A_FILE in str(outcome["error"])


def test_a_named_pipe_in_the_vault_is_left_out_of_the_context_notes(vault):
    os.mkfifo(vault / "Tuyau.md")
    fixed_notes(["Tuyau.md", "Profil.md"])

    memory_settings = MemorySettings.load()  # the worker thread has no test database

    result = unblocked(
        vault / "Tuyau.md",
        lambda: context_notes_get(use_cache=False, memory_settings=memory_settings),
    )["value"]

    assert [n.path for n in result.notes] == ["Profil.md", "Projets/Makilab.md"]
    assert REASON_NOT_A_FILE in result.failures["Tuyau.md"]
