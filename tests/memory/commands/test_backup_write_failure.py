"""memory_backup that cannot write its copy: a French refusal, and nothing left behind."""

from __future__ import annotations

import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory.services import backup
from memory.services.backup import DATABASE_FILE, MANIFEST_FILE

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_backup_into_an_existing_folder_it_cannot_write_is_refused_in_french(
    tmp_path, monkeypatch
):
    """An empty folder that exists (mkdir(exist_ok=True) passes) but where nothing can be
    created, like a read-only mount or another user's folder (the tests run as root, whom
    no permission stops: the system's refusal is given here): SQLite's would be "unable to
    open database file"."""
    touch = Path.touch

    def refused(path, *args, **kwargs):
        if path.parent == tmp_path:
            raise PermissionError(13, "Permission denied", str(path))
        return touch(path, *args, **kwargs)

    monkeypatch.setattr(Path, "touch", refused)
    with pytest.raises(
        CommandError, match=f"Impossible d'écrire la sauvegarde dans {tmp_path} : accès refusé"
    ):
        call_command("memory_backup", str(tmp_path), stdout=StringIO())
    assert list(tmp_path.iterdir()) == []


def test_a_backup_that_fails_halfway_leaves_nothing_and_the_next_attempt_goes_through(
    tmp_path, monkeypatch
):
    """A half-written copy would refuse the next attempt ("contient déjà une sauvegarde")."""
    counts = backup._counts

    def disk_full(db):
        full = sqlite3.OperationalError("database or disk is full")
        full.sqlite_errorcode, full.sqlite_errorname = sqlite3.SQLITE_FULL, "SQLITE_FULL"
        raise full

    monkeypatch.setattr(backup, "_counts", disk_full)
    with pytest.raises(
        CommandError, match=r"Impossible d'écrire la sauvegarde dans .* : disque plein$"
    ):
        call_command("memory_backup", str(tmp_path), stdout=StringIO())
    assert sorted(p.name for p in tmp_path.iterdir()) == []

    monkeypatch.setattr(backup, "_counts", counts)
    out = StringIO()
    call_command("memory_backup", str(tmp_path), stdout=out)
    assert out.getvalue().startswith(f"Sauvegarde écrite dans {tmp_path} : ")
    assert {DATABASE_FILE, MANIFEST_FILE} <= {p.name for p in tmp_path.iterdir()}
