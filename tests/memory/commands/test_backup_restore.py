"""memory_backup while writes go on, memory_restore into a fresh data dir, reindex, doctor clean."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from memory.models import Message
from memory.services.backup import DATABASE_FILE, MANIFEST_FILE, memory_backup
from memory.services.facts import fact_store
from memory.services.messages import message_save
from memory.services.settings import memory_settings_update
from tests.memory.test_workers import ROOT, _env

pytestmark = pytest.mark.django_db(transaction=True)


def _exchange(i: int) -> None:
    # One transaction per exchange: a snapshot holds both messages or neither.
    with transaction.atomic():
        question = message_save(
            channel="whatsapp", role="user", content=f"Question {i} sur le vélo"
        )
        message_save(
            channel="whatsapp",
            role="assistant",
            content=f"Réponse {i} : la chaîne",
            reply_to_id=question.id,
        )


def _write_while(stop: threading.Event, written: list[int], errors: list[BaseException]) -> None:
    try:
        i = 0
        while not stop.is_set() and i < 2000:
            _exchange(1000 + i)
            i += 1
            written.append(i)
    except BaseException as exc:  # reported to the test thread
        errors.append(exc)
    finally:
        connection.close()


@pytest.fixture
def memory():
    for i in range(20):
        _exchange(i)
    fact_store(key="velo", value="Le vélo de Mickael est un Btwin gris")
    fact_store(key="user_name", value="Le propriétaire s'appelle Mickael", memory_type="identity")
    memory_settings_update(changes={"obsidian_context_notes": ["Profil"], "max_results": 7})


def _backup_during_writes(folder):
    """memory_backup while another thread keeps writing exchanges; (report, exchanges written)."""
    stop, written, errors = threading.Event(), [], []
    writer = threading.Thread(target=_write_while, args=(stop, written, errors))
    writer.start()
    try:
        while len(written) < 30 and writer.is_alive():
            threading.Event().wait(0.01)
        report = memory_backup(directory=folder)
    finally:
        stop.set()
        writer.join(60)
    assert not errors, errors
    return report, len(written)


def test_a_backup_taken_while_another_thread_writes_is_a_consistent_snapshot(tmp_path, memory):
    report, seen_during = _backup_during_writes(tmp_path / "sauvegarde")
    total = Message.objects.count()
    copy = sqlite3.connect(tmp_path / "sauvegarde" / DATABASE_FILE)
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    messages = copy.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    # Taken mid-stream: more than the seed, less than the end, whole exchanges only.
    assert 40 < messages < total, (messages, total, seen_during)
    assert messages % 2 == 0
    orphans = copy.execute(
        "SELECT COUNT(*) FROM messages m WHERE m.reply_to_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM messages p WHERE p.id = m.reply_to_id)"
    ).fetchone()[0]
    assert orphans == 0
    # The FTS5 index in the copy matches its content table.
    copy.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
    assert report.counts["messages"] == messages
    copy.close()
    manifest = json.loads((tmp_path / "sauvegarde" / MANIFEST_FILE).read_text("utf-8"))
    assert manifest["format"] == "makilab-memory-backup" and manifest["version"] == 1
    assert manifest["notes"]["obsidian_context_notes"] == ["Profil.md"]
    assert manifest["counts"]["core_memory"] == 2


def test_backup_refuses_a_folder_that_holds_a_backup(tmp_path, memory):
    out = StringIO()
    call_command("memory_backup", str(tmp_path / "b"), stdout=out)
    assert out.getvalue().startswith(f"Sauvegarde écrite dans {tmp_path / 'b'} : ")
    assert "2 faits, 40 messages, 0 résumé," in out.getvalue()
    with pytest.raises(CommandError, match="contient déjà une sauvegarde"):
        call_command("memory_backup", str(tmp_path / "b"), stdout=StringIO())


def test_restore_refuses_a_folder_without_a_backup(tmp_path):
    with pytest.raises(CommandError, match="Pas de sauvegarde Makilab"):
        call_command("memory_restore", str(tmp_path), stdout=StringIO())


def _manage(data_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _run(data_dir, *args: str) -> str:
    """`manage.py` ``args`` on ``data_dir``, which must succeed: its output."""
    done = _manage(data_dir, *args)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout


def _script(data_dir, script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """A Python ``script`` (Django set up by it) on ``data_dir``: a command stopped midway."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_restore_into_a_fresh_data_dir_then_reindex_leaves_the_doctor_clean(tmp_path, memory):
    """The backup restored is one taken while another thread wrote."""
    report, _ = _backup_during_writes(tmp_path / "sauvegarde")
    messages = report.counts["messages"]
    fresh = tmp_path / "fresh"

    restored = _manage(fresh, "memory_restore", str(tmp_path / "sauvegarde"))
    assert restored.returncode == 0, restored.stderr
    assert f"restaurée : 2 faits, {messages} messages, 0 résumé." in restored.stdout
    assert "reindex --recreate" in restored.stdout

    reindexed = _manage(fresh, "reindex", "--recreate")
    assert reindexed.returncode == 0, reindexed.stderr
    points = messages // 2 + 2  # one per exchange, one per fact
    assert f"Réindexation terminée : {points} points écrits, 0 retirés, 0 en échec." in (
        reindexed.stdout
    )

    doctor = _manage(fresh, "memory_doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert doctor.stdout.strip().endswith("Tout est cohérent."), doctor.stdout

    # The restored memory answers: keyword search through FTS5, the settings are back.
    check = _manage(
        fresh,
        "shell",
        "-c",
        "from memory.stores.fts import fts_search; from memory.models import MemorySettings; "
        "s = MemorySettings.load(); "
        "print(len(fts_search('velo', limit=5000)), s.max_results, s.obsidian_context_notes)",
    )
    assert check.stdout.strip().splitlines()[-1] == f"{messages // 2} 7 ['Profil.md']", check.stderr

    # Now the data dir holds a memory: a second restore needs --force.
    again = _manage(fresh, "memory_restore", str(tmp_path / "sauvegarde"))
    assert again.returncode == 1
    assert "n'est pas vide" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    forced = _manage(fresh, "memory_restore", "--force", str(tmp_path / "sauvegarde"))
    assert forced.returncode == 0, forced.stderr
