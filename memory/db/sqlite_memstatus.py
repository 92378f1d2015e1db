"""SQLite's allocation counters turned off in this process, before its first connection.

SQLite as Debian builds it (and Python links it) counts every allocation under
one mutex for the whole process (SQLITE_CONFIG_MEMSTATUS, on by default). FTS5
allocates for each row it ranks, so two threads querying at once queue on that
mutex: at 100,000 memories, 100 keyword queries took 1.39 s on one thread and
200 took 2.55 s on two (two processes: 1.27 s). With the counters off, 1.10 s
and 1.24 s: each query a fifth faster, and threads run side by side (the keyword
source's facts query beside the messages', T1 beside a search in C).

The setting can only change while SQLite holds nothing: it is changed when
SQLite is not initialized yet, or when nothing is allocated (no connection is
open: a counted allocation comes back to zero), by shutting SQLite down and
initializing it again. Otherwise it is left as it is. Nothing but speed depends
on it: the counters serve only sqlite3_memory_used() and soft heap limits, which
this project does not use.
"""

from __future__ import annotations

import ctypes
import logging
import threading

logger = logging.getLogger(__name__)

SQLITE_OK = 0
SQLITE_CONFIG_MEMSTATUS = 9

_lock = threading.Lock()
_done = False


def sqlite_memstatus_off() -> bool:
    """Turn the counters off if SQLite lets it now; True when they are off after the call."""
    global _done
    with _lock:
        if _done:
            return True
        try:
            import _sqlite3

            # The library the sqlite3 module is linked with (found through its handle).
            library = ctypes.CDLL(_sqlite3.__file__)
            library.sqlite3_memory_used.restype = ctypes.c_int64
            library.sqlite3_malloc.restype = ctypes.c_void_p
            library.sqlite3_free.argtypes = [ctypes.c_void_p]
        except (ImportError, OSError, AttributeError) as exc:
            logger.debug("SQLite's allocation counters left on: %s", exc)
            return False
        if library.sqlite3_config(SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0)) == SQLITE_OK:
            _done = True  # not initialized yet: set before it is
            return True
        # Initialized: counting? (an allocation shows in the total only when it is)
        before = library.sqlite3_memory_used()
        probe = library.sqlite3_malloc(64)
        counting = library.sqlite3_memory_used() > before
        library.sqlite3_free(probe)
        if not counting:
            _done = True  # already off
            return True
        if library.sqlite3_memory_used() != 0:
            logger.debug("SQLite's allocation counters left on: a connection is open")
            return False
        if library.sqlite3_shutdown() != SQLITE_OK:
            return False
        configured = library.sqlite3_config(SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0))
        library.sqlite3_initialize()
        _done = configured == SQLITE_OK
        return _done
