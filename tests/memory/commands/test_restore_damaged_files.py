"""memory_restore and damaged files: a French error, no traceback, the data dir untouched."""

from __future__ import annotations

import json
import sqlite3

import pytest

from memory.exceptions import MemoryServiceError
from memory.services.backup import DATABASE_FILE, MANIFEST_FILE, backup_read, memory_backup
from memory.services.facts import fact_store
from tests.memory.commands.test_backup_restore import _manage

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def backup(tmp_path):
    """A backup of a memory of three facts."""
    for i in range(3):
        fact_store(key=f"fait_{i}", value=f"Le fait numéro {i} du jardin")
    memory_backup(directory=tmp_path / "sauvegarde")
    return tmp_path / "sauvegarde"


def _facts(database) -> int:
    db = sqlite3.connect(database)
    try:
        return db.execute("SELECT COUNT(*) FROM core_memory").fetchone()[0]
    finally:
        db.close()


def test_a_backup_whose_database_is_empty_is_damaged(backup):
    """An empty file passes SQLite's integrity check: backup.json says what it must hold."""
    (backup / DATABASE_FILE).write_bytes(b"")
    with pytest.raises(MemoryServiceError, match="est abîmée : le fichier est vide"):
        backup_read(backup)


def test_a_backup_whose_counts_differ_from_its_manifest_is_damaged(backup):
    db = sqlite3.connect(backup / DATABASE_FILE)
    db.execute("DELETE FROM core_memory WHERE key = 'fait_0'")
    db.commit()
    db.close()
    with pytest.raises(
        MemoryServiceError,
        match=r"est abîmée : 2 lignes dans core_memory, backup\.json en annonce 3",
    ):
        backup_read(backup)


def test_a_manifest_without_counts_is_not_a_backup(backup):
    manifest = json.loads((backup / MANIFEST_FILE).read_text("utf-8"))
    del manifest["counts"]
    (backup / MANIFEST_FILE).write_text(json.dumps(manifest), "utf-8")
    with pytest.raises(MemoryServiceError, match="Pas de sauvegarde Makilab"):
        backup_read(backup)


@pytest.mark.slow
def test_an_empty_backup_is_refused_even_forced_and_the_memory_stays(tmp_path, backup):
    data = tmp_path / "data"
    assert _manage(data, "memory_restore", str(backup)).returncode == 0
    damaged = tmp_path / "abimee"
    damaged.mkdir()
    (damaged / MANIFEST_FILE).write_text((backup / MANIFEST_FILE).read_text("utf-8"), "utf-8")
    (damaged / DATABASE_FILE).write_bytes(b"")

    for args in ([], ["--force"]):
        done = _manage(data, "memory_restore", *args, str(damaged))
        assert done.returncode == 1, done.stdout
        assert "est abîmée : le fichier est vide" in done.stderr, done.stderr[-600:]
        assert "Traceback" not in done.stderr
    assert _facts(data / DATABASE_FILE) == 3


@pytest.mark.slow
def test_restore_over_an_unreadable_database_needs_force_then_replaces_it(tmp_path, backup):
    """Disaster recovery: the live database is damaged, the owner restores the backup."""
    data = tmp_path / "data"
    data.mkdir()
    (data / DATABASE_FILE).write_bytes(b"\x00pas une base SQLite\x00" * 4096)

    refused = _manage(data, "memory_restore", str(backup))
    assert refused.returncode == 1, refused.stdout
    assert "Traceback" not in refused.stderr, refused.stderr[-600:]
    assert "est illisible" in refused.stderr and "--force" in refused.stderr, refused.stderr
    assert (data / DATABASE_FILE).read_bytes().startswith(b"\x00pas une base SQLite")

    forced = _manage(data, "memory_restore", "--force", str(backup))
    assert forced.returncode == 0, forced.stderr[-600:]
    assert "restaurée : 3 faits, 0 message, 0 résumé." in forced.stdout
    assert _facts(data / DATABASE_FILE) == 3
