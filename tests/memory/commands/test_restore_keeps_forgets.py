"""A backup restored over a memory that forgot things since it was taken: the forgets
stand. Still in their undo window they left no erasure mark; the restore reads them from
the memory it replaces and takes the restored rows they recognise again, under the same
topic and undo deadline (forgotten stays forgotten, and stays undoable)."""

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
fact_store(key="code_garage", value="Le code du garage est B4242Z", source_message_id=q.id)
fact_store(key="velo", value="Le vélo est gris")
call_command("memory_backup", "{backup}")
from memory.services.forgetting import topic_forget
print(topic_forget(topic="code garage", actor="user").purge_after.isoformat())
"""
LOOK = """
from memory.models import Fact, Forgetting, Message
from memory.services.forgetting import forgetting_restore
from memory.stores.fts import fts_search
def seen():
    return (
        Fact.objects.filter(value__contains="B4242Z").count(),
        Message.objects.filter(content__contains="B4242Z").count(),
        len(fts_search("B4242Z")),
        Fact.objects.filter(key="velo").count(),
    )
forgotten, forgets = seen(), []
for forget in Forgetting.objects.all():
    forgets.append(f"{forget.topic} {forget.state} {forget.actor} {forget.purge_after.isoformat()}")
    forgetting_restore(forgetting_id=forget.id, actor="user")
print(forgotten, forgets, seen(), sep=" | ")
"""


def _shell(data, code):
    done = _manage(data, "shell", "-c", code)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout.strip().splitlines()


def test_a_forced_restore_keeps_what_was_forgotten_since_the_backup_forgotten(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    purge_after = _shell(data, SETUP.format(backup=backup))[-1]

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    forgotten, forgets, undone = _shell(data, LOOK)[-1].split(" | ")
    assert forgotten == "(0, 0, 0, 1)"  # the fact, the exchange, its FTS entry; not the bike
    assert forgets == f"['code garage active user {purge_after}']"
    assert undone == "(1, 1, 1, 1)"  # the owner can still undo it
    assert "Oublié à nouveau" in restored.stdout, restored.stdout
    assert "1 oubli, 1 fait, 2 messages, 0 résumé." in restored.stdout


ALONE = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory.services.facts import fact_forget, fact_store
secret, _ = fact_store(key="code_portail", value="Le code du portail est 7719")
fact_store(key="velo", value="Le vélo est gris")
call_command("memory_backup", "{backup}")
fact_forget(fact=secret, actor="user")
secret.refresh_from_db()
print(secret.forgotten_at.isoformat())
"""
ALONE_LOOK = """
from memory.models import Fact
from memory.selectors import facts_active
from memory.services.facts import fact_restore
from memory.stores.fts import fts_search_facts
def seen():
    return (
        facts_active().filter(key="code_portail").count(),
        len(fts_search_facts(["7719"])),
        facts_active().filter(key="velo").count(),
    )
forgotten = seen()
fact = Fact.all_objects.get(key="code_portail")
at = fact.forgotten_at and fact.forgotten_at.isoformat()
fact_restore(fact=fact, actor="user")
print(forgotten, at, seen(), sep=" | ")
"""


def test_a_fact_forgotten_alone_since_the_backup_stays_forgotten(tmp_path):
    """Forgotten one by one (no topic forget: the fact's own flag), still in its undo
    window: the restored copy is forgotten again, at the same date, and can be undone."""
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    forgotten_at = _shell(data, ALONE.format(backup=backup))[-1]

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    forgotten, at, undone = _shell(data, ALONE_LOOK)[-1].split(" | ")
    assert forgotten == "(0, 0, 1)"  # the fact, by meaning or keyword; not the bike
    assert at == forgotten_at
    assert undone == "(1, 1, 1)"  # the owner can still undo it
    assert "1 oubli, 1 fait," in restored.stdout, restored.stdout


THEN_TOPIC = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory.services.facts import fact_forget, fact_store
secret, _ = fact_store(key="code_garage", value="Le code du garage est B4242Z")
fact_store(key="velo", value="Le vélo est gris")
call_command("memory_backup", "{backup}")
fact_forget(fact=secret, actor="user")
from memory.services.forgetting import topic_forget
topic_forget(topic="code garage", actor="user")
"""
UNDO_TOPIC = """
from memory.models import Forgetting
from memory.selectors import facts_active
from memory.services.forgetting import forgetting_restore
for forget in Forgetting.objects.filter(state="active"):
    forgetting_restore(forgetting_id=forget.id, actor="user")
print(facts_active().filter(key="code_garage").count(), facts_active().filter(key="velo").count())
"""


def test_a_fact_forgotten_alone_then_by_a_topic_stays_forgotten_when_the_topic_is_undone(
    tmp_path,
):
    """Forgotten alone, then taken by a topic forget, both since the backup (audit 14): on
    the replaced memory the topic's undo gives it back forgotten alone; after a forced
    restore the same undo must too (the topic's take stamped it with its own date, and
    the undo gave it back active)."""
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _shell(data, THEN_TOPIC.format(backup=backup))

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    assert _shell(data, UNDO_TOPIC)[-1] == "0 1"


EDITED = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from memory.services.facts import fact_store, fact_update
courses, _ = fact_store(key="courses", value="Marché le samedi pour les tomates")
fact_store(key="velo", value="Le vélo est gris")
call_command("memory_backup", "{backup}")
fact_update(fact=courses, actor="user", value="Marché le dimanche pour les fraises")
from memory.services.forgetting import topic_forget
print(topic_forget(topic="tomates", actor="user").purge_after.isoformat())
"""
EDITED_LOOK = """
from memory.models import Fact, Forgetting
from memory.selectors import facts_active
from memory.services.forgetting import forgetting_restore
from memory.stores.fts import fts_search, fts_search_facts
def seen():
    return (
        facts_active().filter(value__contains="tomates").count(),
        len(fts_search("tomates")) + len(fts_search_facts(["tomates"])),
        facts_active().filter(key="velo").count(),
    )
forgotten, forgets = seen(), []
for forget in Forgetting.objects.all():
    forgets.append(f"{forget.topic} {forget.state} {forget.purge_after.isoformat()}")
    forgetting_restore(forgetting_id=forget.id, actor="user")
print(forgotten, forgets, seen(), sep=" | ")
"""


def test_a_text_a_forget_took_from_a_facts_history_stays_forgotten_when_the_backup_holds_it_as_the_value(
    tmp_path,
):
    """The backup holds « courses » as « … tomates »; edited since to « … fraises », its
    old text went into its history, and the forget of « tomates » took that history line
    (the fact itself no longer said it). Restored, the fact said « tomates » again, live:
    searched, exported, injected. The text the forget took is the fact's value there, so
    the replayed forget takes the fact (and its undo gives it back)."""
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    purge_after = _shell(data, EDITED.format(backup=backup))[-1]

    restored = _manage(data, "memory_restore", "--force", str(backup))

    assert restored.returncode == 0, restored.stderr[-800:]
    forgotten, forgets, undone = _shell(data, EDITED_LOOK)[-1].split(" | ")
    assert forgotten == "(0, 0, 1)", restored.stdout  # not the bike
    assert forgets == f"['tomates active {purge_after}']"
    assert undone == "(1, 1, 1)"  # the owner can still undo it
