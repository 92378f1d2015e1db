"""A command run on a data folder whose database was never created (no `migrate`, no
`serve` yet) says so in French and how to create it: it was a traceback ending in
« no such table: core_memory » (QA)."""

from __future__ import annotations

import pytest

from memory.management.french import NOT_MIGRATED_MESSAGE
from tests.memory.commands.test_backup_restore import _manage


@pytest.mark.slow
@pytest.mark.parametrize("args", [("memory_export", "copie.jsonl"), ("memory_stats",)])
def test_a_command_on_a_database_never_created_says_so_in_french(tmp_path, args):
    done = _manage(tmp_path / "data", *(str(tmp_path / a) if "." in a else a for a in args))

    assert done.returncode == 1, done.stderr
    assert NOT_MIGRATED_MESSAGE in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
