"""A backup restored over a memory that renamed a fact since, then erased or forgot it (QA).

The erasure's marks and the carried forgets named the fact by its new key; the backup holds
it under the old one, so a forced restore brought it back live and searchable. Marks and
carried forgets now hold every key the fact had (its history's renames)."""

from __future__ import annotations

import pytest

from tests.memory.commands.test_backup_restore import _manage

pytestmark = pytest.mark.slow

SETUP = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory.models import Fact
from memory.services.facts import fact_store, fact_update, fact_forget
from memory.services.erasing import fact_erase
secret, _ = fact_store(key="code_portail", value="Le code du portail est 7719")
fact_store(key="velo", value="Le vélo est gris")
call_command("memory_backup", "{backup}")
secret = fact_update(fact=Fact.all_objects.get(pk=secret.pk), actor="user", key="portail_code")
{then}
print("ok")
"""
LOOK = """
from memory.models import Fact
from memory.selectors import facts_active
from memory.stores.fts import fts_search_facts
print(
    facts_active().filter(value__contains="7719").count(),
    Fact.all_objects.filter(value__contains="7719").count(),
    len(fts_search_facts(["7719"])),
    facts_active().filter(key="velo").count(),
)
"""


def _shell(data, code):
    done = _manage(data, "shell", "-c", code)
    assert done.returncode == 0, done.stderr[-1500:]
    return done.stdout.strip().splitlines()


def test_a_fact_renamed_then_erased_since_the_backup_stays_erased_after_a_restore(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _shell(
        data,
        SETUP.format(
            backup=backup, then='fact_erase(fact=Fact.all_objects.get(pk=secret.pk), actor="user")'
        ),
    )
    assert _shell(data, LOOK)[-1] == "0 0 0 1"

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    # Erased since the backup: not back, live or hidden.
    assert _shell(data, LOOK)[-1] == "0 0 0 1", restored.stdout


def test_a_fact_renamed_then_forgotten_alone_since_the_backup_stays_forgotten_after_a_restore(
    tmp_path,
):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _shell(
        data,
        SETUP.format(
            backup=backup, then='fact_forget(fact=Fact.all_objects.get(pk=secret.pk), actor="user")'
        ),
    )
    assert _shell(data, LOOK)[-1].startswith("0 1 0")

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    # Forgotten since the backup: still forgotten (restorable), not live.
    assert _shell(data, LOOK)[-1] == "0 1 0 1", restored.stdout


def test_a_fact_renamed_then_taken_by_a_topic_forget_since_the_backup_stays_forgotten(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    then = 'from memory.services.forgetting import topic_forget; topic_forget(topic="code portail", actor="user")'
    _shell(data, SETUP.format(backup=backup, then=then))
    assert _shell(data, LOOK)[-1] == "0 1 0 1"  # hidden, in its undo window

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    assert _shell(data, LOOK)[-1] == "0 1 0 1", restored.stdout
