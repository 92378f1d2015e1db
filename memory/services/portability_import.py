"""Import of a memory export (the format is described in memory.services.portability).

All or nothing: the whole file is read in one transaction, and the first line
that is not valid stops it with a French error naming the line
("ligne 12 : ...") and leaves the memory as it was.

Idempotent: rows are matched on stable keys, so importing the same file twice
changes nothing the second time:

- a fact on its key. A key that exists with the same value is left as is;
  with another value, the memory's value is kept (the owner may have edited
  it) and the key is reported as a conflict; a key forgotten here stays
  forgotten (reported too). Revisions come with a fact that is created;
- a message on (channel, role, author, source, created_at, content), a
  summary on (channel, created_at, content); a row forgotten here is not
  brought back;
- a row erased here for good (a purged forget, an erasure) is not brought
  back either: its mark (memory.services.erased_marks) is matched, its text
  is gone. A fact whose text was erased here is not imported (reported);
- the settings are the file's: only the knobs that differ are written.

New rows enter through the FTS5 triggers like any insert and are left
pending for the indexing machine (``rows_changed``): the running service's
sweep or ``manage.py reindex`` embeds them with the embedder configured here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from django.db import transaction

from memory.services.portability_import_records import Importer, ImportReport
from memory.services.portability_validate import (
    BAD_JSON,
    EMPTY_FILE,
    ImportLineError,
    LineDecoder,
    header_check,
    line_refusal,
)

__all__ = [
    "ImportLineError",
    "memory_import",
    "memory_import_lines",
]


NOT_UTF8 = "le texte n'est pas en UTF-8."
# A byte-order mark, as some Windows editors write one at the start of a UTF-8 file, means
# nothing: the file imports as without it.
BOM = "\ufeff"


def memory_import_lines(lines: Iterable[str | bytes], *, dry_run: bool = False) -> ImportReport:
    """Import the lines of an export; all or nothing (see the module docstring).

    ``dry_run``: the whole import runs (every check, every match) and is rolled
    back: the report says what an import would do, and nothing changes.
    """
    started = time.perf_counter()
    importer = Importer()
    header_seen = False
    with transaction.atomic():
        for number, raw in enumerate(lines, start=1):
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise ImportLineError(number, NOT_UTF8) from None
            if number == 1:
                raw = raw.removeprefix(BOM)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw, cls=LineDecoder)
            except ValueError as exc:
                raise ImportLineError(number, BAD_JSON.format(error=line_refusal(exc))) from None
            if not header_seen:
                header_check(number, record)
                header_seen = True
            else:
                importer.record(number, record)
        if not header_seen:
            raise ImportLineError(1, EMPTY_FILE)
        importer.finish()
        if dry_run:
            transaction.set_rollback(True)
    importer.report.seconds = time.perf_counter() - started
    return importer.report


def memory_import(*, path, dry_run: bool = False) -> ImportReport:
    """Import the export file at ``path`` (UTF-8 JSONL)."""
    with open(path, "rb") as handle:
        return memory_import_lines(handle, dry_run=dry_run)
