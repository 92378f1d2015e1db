"""A throw-away memory (its own SQLite file and Qdrant folder) for benchmarks and the evaluation.

Inside ``throwaway_memory()`` every service works as usual, but on a fresh,
migrated SQLite database, an empty embedded Qdrant and an empty notes folder in a
temporary folder; all are deleted on exit. The owner's memory is never touched, and the Qdrant
folder of a running `serve` (locked by it) is not needed.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.db import connection
from django.test.utils import override_settings


@contextlib.contextmanager
def throwaway_memory() -> Iterator[Path]:
    from memory.stores.vectors import vector_store_reset

    folder = Path(tempfile.mkdtemp(prefix="makilab-throwaway-"))
    test_settings = connection.settings_dict.setdefault("TEST", {})
    previous_name = test_settings.get("NAME")
    test_settings["NAME"] = str(folder / "memory.sqlite3")
    old_name = connection.settings_dict["NAME"]
    vector_store_reset()
    try:
        with override_settings(
            QDRANT_URL="",
            QDRANT_PATH=folder / "qdrant",
            CELERY_TASK_ALWAYS_EAGER=False,
            OBSIDIAN_API_URL="",
            OBSIDIAN_VAULT_PATH=folder / "notes",
        ):
            connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
            try:
                yield folder
            finally:
                vector_store_reset()
                connection.creation.destroy_test_db(old_name, verbosity=0)
    finally:
        test_settings["NAME"] = previous_name
        shutil.rmtree(folder, ignore_errors=True)
