"""What a restore must replay, kept on disk until it has: the replaced memory's erasure
marks and active forgets (memory.services.backup).

``memory_restore`` reads them from the database it is about to replace, then overwrites
that database; ``memory_restore_finish`` replays them after the migration. Held in memory
only, a restore killed in between lost them for good: the rows the replaced memory had
erased came back, and running the restore again read the marks of the half-restored file,
the backup's (QA). So they are written here, beside the database and on disk, before the
overwrite; a restore run again replays them (the database holds the backup's copy by
then), and the finish removes the file once they are replayed. While it is there, ``serve`` refuses to start.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, fields
from datetime import datetime
from pathlib import Path

from memory.services.backup_forgets import CarriedForget

JOURNAL_SUFFIX = ".restore.json"
RESTORE_UNFINISHED = (
    "Une restauration n'a pas fini ({file} est là) : relancez "
    "`python manage.py memory_restore --force <dossier de la sauvegarde>` avant de démarrer "
    "(ou supprimez ce fichier pour garder la mémoire telle qu'elle est, sans rejouer ses "
    "effacements et ses oublis)."
)


def journal_path(database: Path) -> Path:
    return database.with_name(database.name + JOURNAL_SUFFIX)


def journal_write(database: Path, marks: list, forgets: list[CarriedForget]) -> None:
    """Write the journal whole, on disk (a temporary file renamed over it)."""
    path = journal_path(database)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"erased_marks": [list(mark) for mark in marks], "forgets": [_out(f) for f in forgets]}
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def journal_read(database: Path) -> tuple[list[tuple], list[CarriedForget]] | None:
    """The marks and forgets a restore cut short left to replay; None when none was."""
    path = journal_path(database)
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return [tuple(mark) for mark in data["erased_marks"]], [_in(f) for f in data["forgets"]]


def journal_clear(database: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        journal_path(database).unlink()


def _out(forget: CarriedForget) -> dict:
    data = asdict(forget)
    for name, value in data.items():
        if isinstance(value, datetime):
            data[name] = value.isoformat()
        elif isinstance(value, set):
            data[name] = sorted(list(item) if isinstance(item, tuple) else item for item in value)
    return data


def _in(data: dict) -> CarriedForget:
    kinds = {f.name: f for f in fields(CarriedForget)}
    values = {}
    for name, value in data.items():
        if name not in kinds:
            continue
        if name in ("created_at", "purge_after", "expires_at") and isinstance(value, str):
            value = datetime.fromisoformat(value)
        elif name == "revisions":
            value = {tuple(item) for item in value}
        elif isinstance(value, list):
            value = set(value)
        values[name] = value
    return CarriedForget(**values)
