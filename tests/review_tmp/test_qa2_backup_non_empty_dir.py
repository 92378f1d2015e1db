"""memory_backup's help says its directory is « Un dossier nouveau ou vide. » (and its
refusal of a file says « la sauvegarde s'écrit dans un dossier nouveau ou vide »), yet it
writes makilab.sqlite3 and backup.json into a folder holding other files, and an empty
argument (``memory_backup ""``, e.g. an unset shell variable) is taken as the current
directory: run from the project it dropped a full copy of the memory there."""

from __future__ import annotations

import os
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_a_folder_holding_other_files_is_refused(tmp_path):
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("à garder", encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("memory_backup", str(folder), stdout=StringIO())
    assert sorted(os.listdir(folder)) == ["notes.txt"]


def test_an_empty_directory_argument_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "projet.txt").write_text("x", encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("memory_backup", "", stdout=StringIO())
    assert sorted(os.listdir(tmp_path)) == ["projet.txt"]
