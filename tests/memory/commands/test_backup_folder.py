"""memory_backup writes into a new or empty folder only, as its help says (QA: it wrote its
copy beside a folder's other files, and ``memory_backup ""``, an unset shell variable, into
the current folder)."""

from __future__ import annotations

import os
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_folder_holding_other_files_is_refused(tmp_path):
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("à garder", encoding="utf-8")
    with pytest.raises(CommandError, match="contient déjà d'autres fichiers"):
        call_command("memory_backup", str(folder), stdout=StringIO())
    assert sorted(os.listdir(folder)) == ["notes.txt"]


@pytest.mark.parametrize("argument", ["", "  "])
def test_no_folder_is_refused_not_taken_for_the_current_one(tmp_path, monkeypatch, argument):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "projet.txt").write_text("x", encoding="utf-8")
    with pytest.raises(CommandError, match="Donnez le dossier de la sauvegarde"):
        call_command("memory_backup", argument, stdout=StringIO())
    assert sorted(os.listdir(tmp_path)) == ["projet.txt"]


def test_an_empty_folder_or_a_new_one_takes_the_backup(tmp_path):
    empty = tmp_path / "vide"
    empty.mkdir()
    for folder in (empty, tmp_path / "nouveau" / "dossier"):
        out = StringIO()
        call_command("memory_backup", str(folder), stdout=out)
        assert "Sauvegarde écrite" in out.getvalue()
        assert sorted(os.listdir(folder)) == ["backup.json", "makilab.sqlite3"]
