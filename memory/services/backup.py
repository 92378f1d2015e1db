"""Backup and restore of the SQLite file (T1), while the service runs.

``memory_backup`` copies the live database with SQLite's online backup API
(``sqlite3.Connection.backup``) from a connection of its own: the copy is one
read transaction, so it is a consistent snapshot of what was committed, taken
while other processes keep writing (WAL mode: writers are not blocked). A
file copy could catch the database between two pages of a write, or miss the
part still in the WAL file. Beside the copy, ``backup.json`` names the file
and holds the notes settings a restore needs to find the notes again (the
context notes, their tag, the vault or Obsidian API the service read them
from; the vault itself is the owner's and is not copied).

``memory_restore`` copies a backup into the configured database (the same
API, the other way), refusing to overwrite a memory that holds data unless
forced. Qdrant is not in the backup: it is derived from T1. After the copy,
``memory_restore_finish`` replays on the restored memory what the replaced one
did since the backup was taken (its erasures, its forgets still in their undo
window), and sets every indexable row back to pending: the points the restored
rows claim are not in this data dir. The indexing sweep rebuilds them on its own
(``manage.py reindex`` at once; then ``memory_doctor`` checks).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.error_reasons import os_error_reason, sqlite_error_reason
from memory.exceptions import MemoryServiceError
from memory.services.backup_forgets import forgets_read
from memory.services.erased_replay import marks_read
from memory.services.restore_journal import journal_clear, journal_read, journal_write

BACKUP_FORMAT = "makilab-memory-backup"
BACKUP_VERSION = 1
DATABASE_FILE = "makilab.sqlite3"
MANIFEST_FILE = "backup.json"
# Tables that hold the memory: a database with rows in one of them is not "empty".
MEMORY_TABLES = ("core_memory", "messages", "memory_summary")

BACKUP_EXISTS = "Le dossier {dir} contient déjà une sauvegarde : choisissez un autre dossier."
BACKUP_INTO_LIVE = (
    "Le dossier {dir} est celui de la mémoire en service : choisissez un autre dossier "
    "pour la sauvegarde."
)
BACKUP_NOT_A_FOLDER = (
    "{dir} est un fichier, pas un dossier : la sauvegarde s'écrit dans un dossier nouveau ou vide."
)
BACKUP_UNREACHABLE = "Impossible d'accéder au dossier de sauvegarde {dir} : {detail}."
BACKUP_NOT_EMPTY = (
    "Le dossier {dir} contient déjà d'autres fichiers : la sauvegarde s'écrit dans un "
    "dossier nouveau ou vide."
)
BACKUP_DIRECTORY = "Impossible de créer le dossier de sauvegarde {dir} : {detail}."
BACKUP_WRITE = "Impossible d'écrire la sauvegarde dans {dir} : {detail}"
NOT_A_BACKUP = "Pas de sauvegarde Makilab dans {dir} (fichier {file} absent ou illisible)."
BACKUP_UNREADABLE = "La sauvegarde {file} est illisible : {error}."
BAD_BACKUP = "La sauvegarde {file} est abîmée : {error}."
EMPTY_DATABASE = "le fichier est vide"
COUNTS_DIFFER = "{found} lignes dans {table}, {manifest} en annonce {expected}"
RESTORE_COPY_FAILED = "La copie de la sauvegarde dans {file} a échoué : {error}."
# How long a restore waits for another process to release the database (SQLite's backup
# waited forever: review, a restore beside an MCP server or a shell hung).
RESTORE_LOCK_WAIT_S = 30
LOCKED_REASON = (
    "un autre processus écrit dans la base (un serveur MCP, un shell, un worker) ; "
    "arrêtez-le, puis relancez"
)
TARGET_UNREADABLE = (
    "La base actuelle {file} est illisible ({error}). Relancez avec --force pour la "
    "remplacer par la sauvegarde."
)
TARGET_NOT_EMPTY = (
    "La mémoire de destination n'est pas vide ({what}) : la restauration l'écraserait. "
    "Relancez avec --force pour l'écraser, ou choisissez un MAKILAB_DATA_DIR vide."
)
SERVE_RUNNING = (
    "« serve » tourne sur ce dossier de données : arrêtez-le avant de restaurer "
    "(une restauration remplace la base sous ses pieds)."
)


@dataclass
class BackupReport:
    directory: Path
    database: Path
    bytes: int
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def database_path() -> Path:
    """The SQLite file Django uses now (the test database inside tests)."""
    return Path(connection.settings_dict["NAME"])


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=settings.SQLITE_BUSY_TIMEOUT_MS / 1000)
    db.execute(f"PRAGMA busy_timeout={settings.SQLITE_BUSY_TIMEOUT_MS}")
    return db


def _counts(db: sqlite3.Connection) -> dict[str, int]:
    present = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return {
        table: db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]  # our constant names
        for table in MEMORY_TABLES
        if table in present
    }


def _check(db: sqlite3.Connection, path: Path) -> None:
    result = db.execute("PRAGMA integrity_check").fetchone()[0]
    if result != "ok":
        raise MemoryServiceError(BAD_BACKUP.format(file=path, error=result))


def notes_settings() -> dict[str, object]:
    """Where the notes come from and which ones the pre-hook injects (no secret)."""
    from memory.models import MemorySettings

    row = MemorySettings.load()
    return {
        "obsidian_context_enabled": row.obsidian_context_enabled,
        "obsidian_context_notes": row.obsidian_context_notes,
        "obsidian_context_tag": row.obsidian_context_tag,
        "obsidian_vault_path": str(settings.OBSIDIAN_VAULT_PATH),
        "obsidian_api_url": settings.OBSIDIAN_API_URL or "",
    }


def memory_backup(*, directory: Path) -> BackupReport:
    """Copy the live database into ``directory`` (created if needed), with backup.json."""
    started = time.perf_counter()
    directory = Path(directory)
    target = directory / DATABASE_FILE
    _backup_folder_make(directory)
    try:
        # Created here first: the system's refusal (a folder it cannot write in, a read-only
        # mount) has a reason to say; SQLite's would be "unable to open database file".
        target.touch(exist_ok=False)
    except FileExistsError:  # another backup, started since the check: leave it be
        raise MemoryServiceError(BACKUP_EXISTS.format(dir=directory)) from None
    except OSError as exc:
        detail = os_error_reason(exc)
        raise MemoryServiceError(BACKUP_WRITE.format(dir=directory, detail=detail)) from exc
    try:
        counts = _backup_write(directory, target)
    except MemoryServiceError:  # the copy failed its integrity check
        _backup_remove(directory)
        raise
    except (sqlite3.Error, OSError) as exc:  # a full disk
        _backup_remove(directory)
        detail = os_error_reason(exc) if isinstance(exc, OSError) else sqlite_error_reason(exc)
        raise MemoryServiceError(BACKUP_WRITE.format(dir=directory, detail=detail)) from exc
    return BackupReport(
        directory=directory,
        database=target,
        bytes=target.stat().st_size,
        counts=counts,
        seconds=time.perf_counter() - started,
    )


def _backup_folder_make(directory: Path) -> None:
    """The backup's folder, made if missing; refused when it is a file, holds a backup or
    other files, or the system will not let it be read or made (a folder on the way
    closed, a file)."""
    try:
        live = database_path()
        if live.is_file() and directory.exists() and directory.resolve() == live.resolve().parent:
            raise MemoryServiceError(BACKUP_INTO_LIVE.format(dir=directory))
        if (directory / DATABASE_FILE).exists() or (directory / MANIFEST_FILE).exists():
            raise MemoryServiceError(BACKUP_EXISTS.format(dir=directory))
        if directory.exists() and not directory.is_dir():
            raise MemoryServiceError(BACKUP_NOT_A_FOLDER.format(dir=directory))
        if directory.is_dir() and any(directory.iterdir()):  # QA: it wrote beside others' files
            raise MemoryServiceError(BACKUP_NOT_EMPTY.format(dir=directory))
    except OSError as exc:
        detail = os_error_reason(exc)
        raise MemoryServiceError(BACKUP_UNREACHABLE.format(dir=directory, detail=detail)) from exc
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file on the way; no permission
        detail = os_error_reason(exc)
        raise MemoryServiceError(BACKUP_DIRECTORY.format(dir=directory, detail=detail)) from exc


def _backup_write(directory: Path, target: Path) -> dict[str, int]:
    """The copy and its manifest; returns the copy's row counts."""
    source = _connect(database_path())
    try:
        copy = sqlite3.connect(target)
        try:
            # One step (pages=-1): one read transaction, a snapshot of what was committed.
            source.backup(copy)
            _check(copy, target)
            counts = _counts(copy)
        finally:
            copy.close()
    finally:
        source.close()
    manifest = {
        "format": BACKUP_FORMAT,
        "version": BACKUP_VERSION,
        "created_at": timezone.now().isoformat(),
        "database": DATABASE_FILE,
        "counts": counts,
        "notes": notes_settings(),
    }
    (directory / MANIFEST_FILE).write_text(
        json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return counts


def _backup_remove(directory: Path) -> None:
    """What a failed backup wrote (nothing was there: BACKUP_EXISTS): a half-written copy
    would refuse the next attempt and could pass for a backup."""
    with contextlib.suppress(OSError):
        _database_remove(directory / DATABASE_FILE)
    with contextlib.suppress(OSError):
        (directory / MANIFEST_FILE).unlink(missing_ok=True)


def backup_read(directory: Path) -> dict:
    """The manifest of a backup, after checking its database file."""
    directory = Path(directory)
    try:
        manifest = json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise MemoryServiceError(NOT_A_BACKUP.format(dir=directory, file=MANIFEST_FILE)) from None
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise MemoryServiceError(NOT_A_BACKUP.format(dir=directory, file=MANIFEST_FILE))
    expected = manifest.get("counts")
    if not isinstance(expected, dict):
        raise MemoryServiceError(NOT_A_BACKUP.format(dir=directory, file=MANIFEST_FILE))
    database = directory / str(manifest.get("database") or DATABASE_FILE)
    try:
        if not database.is_file():
            raise MemoryServiceError(NOT_A_BACKUP.format(dir=directory, file=database.name))
        with database.open("rb") as handle:  # SQLite would say "unable to open database file"
            empty = not handle.read(1)
    except OSError as exc:
        detail = os_error_reason(exc)
        raise MemoryServiceError(BACKUP_UNREADABLE.format(file=database, error=detail)) from None
    if empty:  # SQLite reads it as a sound, empty database
        raise MemoryServiceError(BAD_BACKUP.format(file=database, error=EMPTY_DATABASE))
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            _check(db, database)
            counts = _counts(db)
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        error = sqlite_error_reason(exc)
        raise MemoryServiceError(BAD_BACKUP.format(file=database, error=error)) from None
    # The manifest's counts were taken from the copy itself: any difference is damage.
    differ = [
        COUNTS_DIFFER.format(
            table=table,
            found=counts.get(table, 0),
            manifest=MANIFEST_FILE,
            expected=expected.get(table, 0),
        )
        for table in sorted(set(counts) | set(expected))
        if counts.get(table, 0) != expected.get(table, 0)
    ]
    if differ:
        raise MemoryServiceError(BAD_BACKUP.format(file=database, error=" ; ".join(differ)))
    return manifest | {"database_path": database}


def _database_error(path: Path) -> str | None:
    """Why SQLite cannot read the database at ``path`` (None: it can, or there is none)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    db = _connect(path)
    try:
        _counts(db)
    except sqlite3.DatabaseError as exc:  # "file is not a database", a damaged page
        return sqlite_error_reason(exc)
    finally:
        db.close()
    return None


def _database_remove(path: Path) -> None:
    """Remove an unreadable database, with its WAL: a stale WAL would be replayed into the copy."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def embedded_qdrant() -> Path | None:
    """The embedded Qdrant folder of this data dir, when it holds something."""
    qdrant = Path(settings.QDRANT_PATH)
    if not settings.QDRANT_URL and qdrant.is_dir() and any(qdrant.iterdir()):
        return qdrant
    return None


def _target_content(target: Path) -> str | None:
    """What makes the destination not empty (None: safe to restore over)."""
    qdrant = embedded_qdrant()
    if qdrant is not None:
        return f"dossier Qdrant {qdrant}"
    if not target.exists() or target.stat().st_size == 0:
        return None
    db = _connect(target)
    try:
        counts = _counts(db)
    finally:
        db.close()
    rows = sum(counts.values())
    return f"{rows} lignes dans {target}" if rows else None


def memory_restore(*, directory: Path, force: bool = False) -> dict:
    """Copy a backup into the configured database; returns the backup's manifest.

    The service must be stopped. Refuses a destination that holds a memory
    (rows, or an embedded Qdrant folder with content), or a database SQLite
    cannot read, unless ``force``. The backup is checked first (``backup_read``).
    """
    from memory.services.serve_link import serve_running

    if serve_running():  # it would keep writing to the file being replaced
        raise MemoryServiceError(SERVE_RUNNING)
    manifest = backup_read(directory)
    target = database_path()
    unreadable = _database_error(target)
    if unreadable and not force:
        raise MemoryServiceError(TARGET_UNREADABLE.format(file=target, error=unreadable))
    found = None if unreadable else _target_content(target)
    if found and not force:
        raise MemoryServiceError(TARGET_NOT_EMPTY.format(what=found))
    # What the replaced memory did since the backup was taken, replayed on the restored
    # one (memory_restore_finish): its erasures, and its forgets still in their undo window.
    replaced = not unreadable and target.exists()
    # A restore cut short left the replaced memory's (restore_journal): the database holds
    # the backup's copy now, the replaced memory is the journal's.
    journal = journal_read(target)
    if journal is not None:
        manifest["erased_marks"], manifest["forgets"] = journal
    else:
        manifest["erased_marks"] = marks_read(target) if replaced else []
        manifest["forgets"] = forgets_read(target) if replaced else []
    journal_write(target, manifest["erased_marks"], manifest["forgets"])
    connection.close()
    if unreadable:  # SQLite cannot copy into it: the backup replaces the file
        _database_remove(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    source = sqlite3.connect(f"file:{manifest['database_path']}?mode=ro", uri=True)
    destination = _connect(target)
    try:
        # The backup API writes through SQLite (WAL included), unlike a file copy.
        try:
            source.backup(destination, progress=_waited_at_most(RESTORE_LOCK_WAIT_S))
        except (sqlite3.Error, _LockedTooLong) as exc:  # the memory as it was (review)
            if journal is None:
                journal_clear(target)
            error = LOCKED_REASON if isinstance(exc, _LockedTooLong) else sqlite_error_reason(exc)
            raise MemoryServiceError(RESTORE_COPY_FAILED.format(file=target, error=error)) from None
        _check(destination, target)
        _rows_pending(destination)
        manifest["restored_counts"] = _counts(destination)
    finally:
        destination.close()
        source.close()
    return manifest


def _rows_pending(db: sqlite3.Connection) -> None:
    """The copy's rows no longer claim a point, at once: its « indexed » speaks of the
    backed-up memory's Qdrant folder, not this one, and a restore killed before its finish
    left them so, a point never written (QA). ``_vectors_reset`` requeues them properly
    after the migration; until then the sweep sends pending rows. A table of an older
    schema without the column is left to it."""
    for table in MEMORY_TABLES:
        with contextlib.suppress(sqlite3.OperationalError):
            db.execute(f"UPDATE {table} SET index_state = 'pending' WHERE index_state = 'indexed'")
    db.commit()


class _LockedTooLong(Exception):
    """The destination stayed locked by another process past the restore's wait."""


def _waited_at_most(seconds: float):
    """A progress callback for sqlite3's backup: it retries a locked database forever;
    this one gives up after ``seconds`` (the copy is rolled back, the database untouched)."""
    deadline = time.monotonic() + seconds

    def progress(status: int, remaining: int, total: int) -> None:
        if status in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) and time.monotonic() > deadline:
            raise _LockedTooLong

    return progress
