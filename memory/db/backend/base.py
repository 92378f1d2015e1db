"""Django's SQLite backend, with this process's writers queued for SQLite's write lock.

Every transaction here is IMMEDIATE (settings.DATABASES): it takes SQLite's write
lock at BEGIN. A writer that finds the lock taken is left to SQLite's busy
handler, which sleeps and retries (1, 2, 5, 10, 15, 20, 25 … 100 ms) and is not
woken when the lock is freed, while the writer that just committed takes it
again at once. With `serve` taking 1,000 messages over HTTP from 4 clients
while its worker indexed them, a BEGIN waited 15.4 ms on average (1.2 s at
worst) for a lock that was free most of the time; a POST's p95 was 74-98 ms and
its p99 208-253 ms.

So the threads of this process first queue on a lock of their own per database
file, held from BEGIN to COMMIT or ROLLBACK (or the connection's close): the
next writer is woken when the last one ends, and SQLite's busy handler only
deals with other processes (a management command, a worker elsewhere). With
it, in the same run alternating, a POST's p95 was 39-49 ms and its p99 53-65 ms
(p50 about the same); the rows indexed per second did not change (the embedding
bounds them).

The queue serialises only what SQLite serialises anyway (every transaction takes the
write lock) and never holds back what SQLite would let through: a thread that
waits longer than the busy timeout goes on to BEGIN as before, and SQLite
answers as it always did (so a transaction of this process held for longer than
the busy timeout delays the next one's error to at most twice that timeout).
Statements outside a transaction (autocommit) are not queued.
"""

from __future__ import annotations

import threading

from django.db.backends.sqlite3 import base

_queues: dict[str, threading.Lock] = {}
_queues_lock = threading.Lock()


def writer_queue(database: str) -> threading.Lock:
    """The lock this process's transactions on ``database`` (a file path) queue on."""
    with _queues_lock:
        return _queues.setdefault(database, threading.Lock())


class DatabaseWrapper(base.DatabaseWrapper):
    # The queue this connection's open transaction holds (None: none, or it timed out).
    _queue_held: threading.Lock | None = None

    def get_new_connection(self, conn_params):
        """Django's connection, with the fact keys' fold as SQL (services.fact_keys.key_as_stored)."""
        from memory.models.rules import fact_key_folded  # once a connection, not a row

        connection = super().get_new_connection(conn_params)
        connection.create_function(
            "makilab_key_folded",
            1,
            lambda key: None if key is None else fact_key_folded(key),
            deterministic=True,
        )
        return connection

    def _start_transaction_under_autocommit(self):
        if self._queue_held is None and not self.is_in_memory_db():
            queue = writer_queue(str(self.settings_dict["NAME"]))
            # The busy timeout SQLite would have waited for the lock (OPTIONS "timeout").
            if queue.acquire(timeout=float(self.settings_dict["OPTIONS"].get("timeout", 5))):
                self._queue_held = queue
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._queue_release()
            raise

    def _queue_release(self) -> None:
        held, self._queue_held = self._queue_held, None
        if held is not None:
            held.release()

    def _transaction_ended(self) -> bool:
        return self.connection is None or not self.connection.in_transaction

    def _commit(self):
        try:
            return super()._commit()
        finally:
            if self._transaction_ended():  # a failed COMMIT leaves it open, for the rollback
                self._queue_release()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            if self._transaction_ended():
                self._queue_release()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._queue_release()
