"""This process's SQLite writers queue for the write lock (memory.db.backend).

Each test opens its own connections on a file of its own, with SQLite's busy
handler off (busy_timeout 0): a transaction that meets the lock held fails at
once with "database is locked", unless the process's queue made it wait its
turn. The queue waits at most the OPTIONS "timeout" (the busy timeout SQLite
would otherwise wait).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.db import OperationalError
from django.db.backends.sqlite3 import base as django_sqlite
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory.db.backend.base import DatabaseWrapper, writer_queue
from tests.stateful import stateful_settings


def _wrapper(path, *, queue_timeout: float = 5.0) -> DatabaseWrapper:
    config = {
        **settings.DATABASES["default"],
        "NAME": str(path),
        "CONN_MAX_AGE": 0,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": queue_timeout,
            # SQLite's own busy handler off: only the queue can make a writer wait.
            "init_command": "PRAGMA journal_mode=WAL;PRAGMA busy_timeout=0",
        },
    }
    return DatabaseWrapper(config, alias=f"queue-test-{threading.get_ident()}")


@pytest.fixture(autouse=True)
def _own_connections_allowed(django_db_blocker):
    """These connections are the test's own, on its own file (not the test database)."""
    with django_db_blocker.unblock():
        yield


def _new_database(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    return path


@pytest.fixture
def database(tmp_path):
    return _new_database(tmp_path / "queue.sqlite3")


def _begin(wrapper: DatabaseWrapper) -> None:
    """What transaction.atomic does when it opens the outermost block."""
    wrapper.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)


def _end(wrapper: DatabaseWrapper, *, commit: bool) -> None:
    if commit:
        wrapper.commit()
    else:
        wrapper.rollback()
    wrapper.set_autocommit(True)


def _write(wrapper: DatabaseWrapper, text: str) -> None:
    with wrapper.cursor() as cursor:
        cursor.execute("INSERT INTO notes (text) VALUES (%s)", [text])


def _texts(path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [text for (text,) in db.execute("SELECT text FROM notes ORDER BY id")]


def test_a_writer_waits_its_turn_behind_another_threads_transaction(database):
    first = _wrapper(database)
    _begin(first)
    _write(first, "first")
    outcome: list[object] = []

    def second_writer() -> None:
        second = _wrapper(database)
        try:
            _begin(second)
            _write(second, "second")
            _end(second, commit=True)
            outcome.append("written")
        except OperationalError as exc:  # SQLite's "database is locked"
            outcome.append(exc)
        finally:
            second.close()

    thread = threading.Thread(target=second_writer)
    thread.start()
    # Queued, not refused: still waiting while the first transaction is open.
    thread.join(timeout=0.5)
    assert thread.is_alive() and outcome == []
    _end(first, commit=True)
    thread.join(timeout=10)
    first.close()
    assert outcome == ["written"]
    assert _texts(database) == ["first", "second"]
    assert not writer_queue(str(database)).locked()


@pytest.mark.parametrize("ending", ["rollback", "close", "failed commit, then rollback"])
def test_every_end_of_a_transaction_frees_the_queue(database, monkeypatch, ending):
    wrapper = _wrapper(database)
    _begin(wrapper)
    _write(wrapper, "draft")
    queue = writer_queue(str(database))
    assert queue.locked()
    if ending == "rollback":
        _end(wrapper, commit=False)
    elif ending == "close":
        wrapper.close()
    else:

        def commit_fails(self):
            raise OperationalError("disk I/O error")

        with monkeypatch.context() as patch:
            patch.setattr(django_sqlite.DatabaseWrapper, "_commit", commit_fails)
            with pytest.raises(OperationalError):
                wrapper.commit()
        # Still open: the queue stays held until the rollback ends it.
        assert queue.locked()
        _end(wrapper, commit=False)
    assert not queue.locked()
    wrapper.close()
    assert _texts(database) == []
    # The next writer goes straight in.
    other = _wrapper(database)
    _begin(other)
    _write(other, "kept")
    _end(other, commit=True)
    other.close()
    assert _texts(database) == ["kept"]


def test_past_the_timeout_a_writer_meets_sqlite_as_before_and_holds_nothing(database):
    first = _wrapper(database)
    _begin(first)
    _write(first, "first")
    late = _wrapper(database, queue_timeout=0.01)
    with pytest.raises(OperationalError, match="locked"):
        _begin(late)
    assert late._queue_held is None
    _end(first, commit=True)
    assert not writer_queue(str(database)).locked()
    _begin(late)
    _write(late, "late")
    _end(late, commit=True)
    first.close()
    late.close()
    assert _texts(database) == ["first", "late"]


def test_a_begin_that_sqlite_refuses_frees_the_queue(database):
    """Another process holds SQLite's lock (a connection outside Django's, unqueued): the
    BEGIN fails as before, and the queue it took is given back."""
    other_process = sqlite3.connect(database, isolation_level=None)
    other_process.execute("BEGIN IMMEDIATE")
    wrapper = _wrapper(database)
    with pytest.raises(OperationalError, match="locked"):
        _begin(wrapper)
    assert wrapper._queue_held is None
    assert not writer_queue(str(database)).locked()
    other_process.execute("ROLLBACK")
    other_process.close()
    wrapper.close()


class WritersMachine(RuleBasedStateMachine):
    """Several connections of one thread open, write, commit, roll back and close in
    any order; the queue is held exactly while a transaction is open, and exactly
    the committed writes are in the file."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="writer-queue-"))
        self.path = _new_database(self.folder / "machine.sqlite3")
        self.wrappers = [_wrapper(self.path) for _ in range(3)]
        self.open: dict[int, list[str]] = {}  # wrapper -> its uncommitted writes
        self.committed: list[str] = []
        self.count = 0

    def teardown(self) -> None:
        for wrapper in self.wrappers:
            wrapper.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @precondition(lambda self: not self.open)
    @rule(k=st.integers(0, 2))
    def begin(self, k):
        _begin(self.wrappers[k])
        self.open[k] = []

    @precondition(lambda self: self.open)
    @rule(data=st.data())
    def write(self, data):
        k = data.draw(st.sampled_from(sorted(self.open)))
        self.count += 1
        _write(self.wrappers[k], f"note {self.count}")
        self.open[k].append(f"note {self.count}")

    @precondition(lambda self: not self.open)
    @rule(k=st.integers(0, 2))
    def write_outside_a_transaction(self, k):
        self.count += 1
        _write(self.wrappers[k], f"note {self.count}")
        self.committed.append(f"note {self.count}")

    @precondition(lambda self: self.open)
    @rule(commit=st.booleans())
    def end(self, commit):
        ((k, writes),) = self.open.items()
        _end(self.wrappers[k], commit=commit)
        del self.open[k]
        if commit:
            self.committed += writes

    @rule(k=st.integers(0, 2))
    def close(self, k):
        self.wrappers[k].close()
        self.open.pop(k, None)  # closed mid-transaction: SQLite rolls it back

    @invariant()
    def queue_held_exactly_while_a_transaction_is_open(self):
        assert writer_queue(str(self.path)).locked() == bool(self.open)

    @invariant()
    def exactly_the_committed_writes_are_kept(self):
        assert _texts(self.path) == self.committed


def test_writers_in_any_order():
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(WritersMachine, settings=stateful_settings(examples=40, steps=25))


def test_the_service_connects_through_the_queued_backend():
    from django.db import connections

    assert settings.DATABASES["default"]["ENGINE"] == "memory.db.backend"
    assert isinstance(connections["default"], DatabaseWrapper)
