"""QA: `reindex --recreate` killed while it drops a collection leaves the rows marked
indexed over a collection that is gone.

memory.services.maintenance._requeue_and_drop marks the rows pending and drops the
collection "in one transaction, so whatever stops the rebuild leaves them pending" —
but the drop (shutil.rmtree of the shard folder: not transactional, and the longer the
bigger the collection) runs *inside* the atomic block, before its COMMIT. A SIGKILL
during or right after the rmtree rolls the requeue back: every row still says
`indexed`, the points are gone, and serve's sweep (pending rows only) never rebuilds
them. (The restore's _vectors_reset does it in the safe order: commit, then drop.)
"""

from __future__ import annotations

import pytest

from tests.memory.commands.test_backup_restore import _run, _script
from tests.memory.commands.test_restore_keeps_erasures import SEED

pytestmark = pytest.mark.slow

KILLED_AFTER_DROP = """
import os, signal
import django
django.setup()
from memory.stores.vectors_edge import EdgeVectorStore
real = EdgeVectorStore.drop_collection
def drop_then_killed(self, name):
    real(self, name)
    os.kill(os.getpid(), signal.SIGKILL)  # before the requeue's COMMIT
EdgeVectorStore.drop_collection = drop_then_killed
from django.core.management import call_command
call_command("reindex", "--recreate", "--collection", "knowledge")
"""

STATE = (
    "from memory.models import Fact; "
    "from memory.stores.vectors import KNOWLEDGE, get_vector_store; "
    "print(Fact.all_objects.filter(index_state='indexed').count(), "
    "len(list(get_vector_store().iter_ids(KNOWLEDGE))))"
)


def test_a_recreate_killed_at_its_drop_leaves_no_fact_marked_indexed_without_a_point(tmp_path):
    data = tmp_path / "data"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    _run(data, "reindex")
    assert _run(data, "shell", "-c", STATE).strip().splitlines()[-1] == "2 2"

    killed = _script(data, KILLED_AFTER_DROP)
    assert killed.returncode == -9, killed.stderr[-800:]

    indexed, points = map(int, _run(data, "shell", "-c", STATE).strip().splitlines()[-1].split())
    assert points == 0  # the collection was dropped
    assert indexed == 0, f"{indexed} facts marked indexed, {points} points in knowledge"
