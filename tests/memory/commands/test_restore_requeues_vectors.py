"""A backup holds SQLite only (Qdrant is derived): a restored memory claims no vector its
data dir does not hold. Its rows go back to pending, so the sweep rebuilds them, and a
forced restore drops the embedded collections of the memory it replaces (no orphan)."""

from __future__ import annotations

import pytest

from tests.memory.commands.test_backup_restore import _manage

pytestmark = pytest.mark.slow

SETUP = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory.services.messages import message_save
from memory.services.facts import fact_store
q = message_save(channel="whatsapp", role="user", content="Le code du garage est B4242Z")
message_save(channel="whatsapp", role="assistant", content="Noté.", reply_to_id=q.id)
fact_store(key="velo", value="Le vélo est gris")
from memory.services.maintenance import reindex
reindex()
call_command("memory_backup", "{backup}")
fact_store(key="pneus", value="Les pneus sont neufs")  # after the backup: its point an orphan
reindex()
"""
LOOK = """
from memory.models import Fact, Message
from memory.stores.vectors import get_vector_store
store = get_vector_store()
points = sum(store.count(n) for n in ("knowledge", "conversations") if store.collection_dimension(n))
states = {*Fact.all_objects.values_list("index_state", flat=True)}
states |= {*Message.all_objects.values_list("index_state", flat=True)}
print(points, sorted(states))
"""


def _look(data):
    done = _manage(data, "shell", "-c", LOOK)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout.strip().splitlines()[-1]


def test_a_restored_memory_is_pending_indexing_and_holds_no_stale_point(tmp_path):
    data, backup, fresh = tmp_path / "data", tmp_path / "sauvegarde", tmp_path / "fresh"
    setup = _manage(data, "shell", "-c", SETUP.format(backup=backup))
    assert setup.returncode == 0, setup.stderr[-800:]
    assert _look(data) == "3 ['indexed']"

    into_fresh = _manage(fresh, "memory_restore", str(backup))
    over_data = _manage(data, "memory_restore", "--force", str(backup))

    assert into_fresh.returncode == over_data.returncode == 0, over_data.stderr[-800:]
    assert _look(fresh) == _look(data) == "0 ['pending']"
    assert "2 lignes remises en attente d'indexation" in into_fresh.stdout, into_fresh.stdout
    assert "collections Qdrant de" in over_data.stdout, over_data.stdout
