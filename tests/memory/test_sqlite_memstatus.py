"""SQLite's allocation counters (one process-wide mutex on every allocation) are off in
a Django process, and only ever changed while SQLite holds nothing."""

from __future__ import annotations

import _sqlite3
import ctypes
import sqlite3
import subprocess
import sys
import textwrap

from django.conf import settings


def _memory_used() -> int:
    library = ctypes.CDLL(_sqlite3.__file__)
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return library.sqlite3_memory_used()


def test_a_django_process_counts_no_allocation():
    """The app turned them off as Django started (memory.apps): a connection and an FTS5
    query allocate, and nothing is counted."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
    db.execute("INSERT INTO t VALUES ('le vélo du lundi')")
    assert db.execute("SELECT rowid FROM t WHERE t MATCH 'velo'").fetchall() == [(1,)]
    assert _memory_used() == 0
    db.close()


def _run(code: str) -> list[str]:
    """Run ``code`` in a new interpreter (SQLite fresh in it); its printed lines."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        cwd=settings.BASE_DIR,
    )
    return out.stdout.split()


PRELUDE = """
import ctypes, sqlite3, _sqlite3
from memory.db.sqlite_memstatus import sqlite_memstatus_off
lib = ctypes.CDLL(_sqlite3.__file__)
lib.sqlite3_memory_used.restype = ctypes.c_int64
"""


def test_before_sqlite_starts_they_are_set_off():
    assert _run(
        PRELUDE
        + """
print(sqlite_memstatus_off())
db = sqlite3.connect(":memory:")
print(db.execute("SELECT 1").fetchone()[0], lib.sqlite3_memory_used())
"""
    ) == ["True", "1", "0"]


def test_an_open_connection_keeps_them_on_and_working_then_once_closed_they_go_off():
    assert _run(
        PRELUDE
        + """
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE t (x)")
print(sqlite_memstatus_off(), lib.sqlite3_memory_used() > 0)
db.execute("INSERT INTO t VALUES (1)")  # untouched by the refusal
print(db.execute("SELECT x FROM t").fetchone()[0])
db.close()
print(sqlite_memstatus_off())
again = sqlite3.connect(":memory:")
print(again.execute("SELECT 2").fetchone()[0], lib.sqlite3_memory_used())
"""
    ) == ["False", "True", "1", "True", "2", "0"]
