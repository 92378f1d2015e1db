"""QA: a memory_restore killed (SIGKILL) after it copied the backup over the live
database but before memory_restore_finish replayed the replaced memory's erasures.

README ("Backup and restore"): "Erased stays erased: restored with --force over a
memory that erased rows since the backup was taken, it keeps that memory's erasure
marks and deletes each restored row they recognise again". The marks are read into the
in-memory manifest only, then the live database is overwritten (memory_restore), and
replayed later (memory_restore_finish, after `migrate`). A kill in between loses the
marks for good: the erased rows are back, and running the restore again (the operator's
only way to finish it) reads the marks of the half-restored file, i.e. the backup's.
"""

from __future__ import annotations

import pytest

from tests.memory.commands.test_backup_restore import _run, _script
from tests.memory.commands.test_restore_keeps_erasures import ERASE, LOOK, SEED

pytestmark = pytest.mark.slow

# memory_restore, SIGKILLed at the moment it starts the migration of the copied file
# (the copy is committed; memory_restore_finish has not run).
KILLED_RESTORE = """
import os, signal, sys
import django
django.setup()
import memory.management.commands.memory_restore as command
real = command.call_command
def killed(name, *args, **kwargs):
    if name == "migrate":
        os.kill(os.getpid(), signal.SIGKILL)
    return real(name, *args, **kwargs)
command.call_command = killed
from django.core.management import call_command
call_command("memory_restore", "--force", sys.argv[1])
"""


def test_a_restore_killed_before_its_finish_does_not_bring_back_what_was_erased(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    _run(data, "memory_backup", str(backup))
    assert _run(data, "shell", "-c", ERASE).strip().endswith("1")
    assert _run(data, "shell", "-c", LOOK).strip().splitlines()[-1] == "0 0 0 1"

    killed = _script(data, KILLED_RESTORE, str(backup))
    assert killed.returncode == -9, killed.stderr[-800:]

    # The operator runs the restore again to finish it.
    _run(data, "memory_restore", "--force", str(backup))

    # Erased stays erased: no message, fact or keyword entry holds the erased code.
    assert _run(data, "shell", "-c", LOOK).strip().splitlines()[-1] == "0 0 0 1"


INDEXED = (
    "from memory.models import Fact, Message; "
    "print(Fact.all_objects.filter(index_state='indexed').count(), "
    "Message.all_objects.filter(index_state='indexed').count())"
)


def test_a_restore_killed_before_its_finish_leaves_no_row_marked_indexed_without_a_point(
    tmp_path,
):
    """Into a fresh data dir: the copy says every row is indexed (the backed-up memory's
    points), this data dir has none, and the kill came before _vectors_reset. serve's
    sweep re-sends pending rows only: those rows never get a point (seen with a real
    serve: 170 exchanges and 20 facts 'sans point' after its sweeps)."""
    data, backup, fresh = tmp_path / "data", tmp_path / "sauvegarde", tmp_path / "fresh"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    _run(
        data,
        "shell",
        "-c",
        "from django.core.management import call_command; call_command('reindex')",
    )
    assert _run(data, "shell", "-c", INDEXED).strip().splitlines()[-1] != "0 0"
    _run(data, "memory_backup", str(backup))

    killed = _script(fresh, KILLED_RESTORE.replace('"--force", ', ""), str(backup))
    assert killed.returncode == -9, killed.stderr[-800:]

    assert _run(fresh, "shell", "-c", INDEXED).strip().splitlines()[-1] == "0 0"


def test_the_journal_gives_back_the_marks_and_forgets_it_was_given(tmp_path):
    """What a restore cut short replays is what the replaced memory had, every field."""
    from datetime import UTC, datetime

    from memory.services.backup_forgets import CarriedForget
    from memory.services.restore_journal import journal_clear, journal_read, journal_write

    database = tmp_path / "makilab.sqlite3"
    forget = CarriedForget(
        topic="Zanzibar",
        actor="user",
        selection="words",
        created_at=datetime(2026, 11, 30, 10, tzinfo=UTC),
        purge_after=datetime(2026, 12, 7, 10, tzinfo=UTC),
        facts={"a", "b"},
        messages={"m"},
        revisions={("k", "old", "new")},
        row_id=3,
    )
    expired = CarriedForget(
        topic="",
        actor="system",
        selection="",
        created_at=datetime(2026, 11, 30, 9, tzinfo=UTC),
        purge_after=datetime(2026, 11, 30, 9, tzinfo=UTC),
        facts={"c"},
        alone=True,
        row_id=4,
        expires_at=datetime(2026, 11, 30, 8, tzinfo=UTC),
    )
    undone = CarriedForget(
        topic="[sujet effacé]",
        actor="user",
        selection="words",
        created_at=datetime(2026, 11, 29, 10, tzinfo=UTC),
        purge_after=datetime(2026, 12, 6, 10, tzinfo=UTC),
        undone=True,
        row_id=1,
    )
    marks = [("digest-1", "2026-11-30 10:00:00")]

    journal_write(database, marks, [forget, expired, undone])

    assert journal_read(database) == (marks, [forget, expired, undone])
    journal_clear(database)
    assert journal_read(database) is None


@pytest.mark.slow
def test_a_restore_over_a_database_another_process_holds_fails_in_french(tmp_path):
    """Review: SQLite's backup retries a locked database forever, so a restore beside an
    MCP server or a shell holding a write hung; it now gives up in French, the memory and
    the replays (no journal) as they were."""
    import sqlite3

    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    _run(data, "memory_backup", str(backup))
    holder = sqlite3.connect(data / "makilab.sqlite3", timeout=1)
    holder.execute("BEGIN IMMEDIATE")  # another process writing, for longer than the wait
    try:
        refused = _script(data, WAIT_ONE_SECOND, str(backup), timeout=300)
    finally:
        holder.rollback()
        holder.close()
    assert refused.returncode == 1, refused.stderr[-800:]
    assert "un autre processus écrit dans la base" in refused.stderr, refused.stderr[-800:]
    assert "Traceback" not in refused.stderr
    assert not (data / "makilab.sqlite3.restore.json").exists()


WAIT_ONE_SECOND = """
import sys
import django
django.setup()
import memory.services.backup as backup
backup.RESTORE_LOCK_WAIT_S = 1
from django.core.management import CommandError, call_command
try:
    call_command("memory_restore", "--force", sys.argv[1])
except CommandError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""
