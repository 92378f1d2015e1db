"""A backup restored over a memory that erased things since it was taken: the erasures
stand. The marks of the memory being replaced are kept, and each restored row one of
them recognises is deleted again (erased stays erased, even through a restore)."""

from __future__ import annotations

import pytest

from tests.memory.commands.test_backup_restore import _run

pytestmark = pytest.mark.slow

SEED = (
    "from memory.services.messages import message_save; "
    "from memory.services.facts import fact_store; "
    "q = message_save(channel='whatsapp', role='user', content='Le code du garage est B4242Z'); "
    "message_save(channel='whatsapp', role='assistant', content='Noté.', reply_to_id=q.id); "
    "fact_store(key='code_garage', value='Le code du garage est B4242Z', source_message_id=q.id); "
    "fact_store(key='velo', value='Le vélo est gris')"
)
ERASE = (
    "from datetime import timedelta; from django.utils import timezone; "
    "from memory.services.forgetting import topic_forget, forgettings_purge; "
    "topic_forget(topic='code garage', actor='user'); "
    "print(forgettings_purge(now=timezone.now() + timedelta(days=30)))"
)
LOOK = (
    "from memory.models import Fact, Message; from memory.stores.fts import fts_search; "
    "print(Message.all_objects.filter(content__contains='B4242Z').count(), "
    "Fact.all_objects.filter(value__contains='B4242Z').count(), len(fts_search('B4242Z')), "
    "Fact.objects.filter(key='velo').count())"
)


def test_a_restored_backup_does_not_bring_back_what_was_erased_since(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    _run(data, "memory_backup", str(backup))
    assert _run(data, "shell", "-c", ERASE).strip().endswith("1")

    restored = _run(data, "memory_restore", "--force", str(backup))

    assert "Effacé à nouveau" in restored and "1 fait, 2 messages" in restored, restored
    assert _run(data, "shell", "-c", LOOK).strip().splitlines()[-1] == "0 0 0 1"


def test_a_backup_restored_into_a_fresh_data_dir_is_whole(tmp_path):
    data, backup, fresh = tmp_path / "data", tmp_path / "sauvegarde", tmp_path / "fresh"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    _run(data, "memory_backup", str(backup))

    restored = _run(fresh, "memory_restore", str(backup))

    assert "Effacé à nouveau" not in restored
    assert _run(fresh, "shell", "-c", LOOK).strip().splitlines()[-1] == "1 1 1 1"


UNDONE = (
    "from memory.services.messages import message_save; "
    "from memory.services.facts import fact_store; "
    "from memory.services.forgetting import topic_forget, forgetting_restore; "
    "q = message_save(channel='whatsapp', role='user', content='Le voyage à Zanzibar est en août'); "
    "message_save(channel='whatsapp', role='assistant', content='Noté.', reply_to_id=q.id); "
    "fact_store(key='velo', value='Le vélo est gris'); "
    "r = topic_forget(topic='voyage à Zanzibar', actor='user'); "
    "forgetting_restore(forgetting_id=r.forgetting_id, actor='user')"
)
FORGET_AND_ERASE = (
    "from memory.services.forgetting import topic_forget; "
    "from memory.services.erasing import forgetting_erase; "
    "r = topic_forget(topic='voyage à Zanzibar', actor='user'); "
    "forgetting_erase(forgetting_id=r.forgetting_id, actor='user')"
)
TOPICS = (
    "from memory.models import Forgetting, Message; "
    "print(Forgetting.objects.filter(topic__icontains='zanzibar').count(), "
    "Message.all_objects.filter(content__icontains='zanzibar').count())"
)


def test_a_restored_backup_does_not_bring_back_the_topic_an_erasure_redacted_since(tmp_path):
    """QA 7a. An undone forget in the backup names its topic; since, the same topic was
    forgotten again and erased, whose purge redacted the undone forget's topic too: after
    the restore, the exchange is erased again and the undone forget's topic stays redacted."""
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", UNDONE)
    assert _run(data, "shell", "-c", TOPICS).strip().splitlines()[-1] == "1 1"
    _run(data, "memory_backup", str(backup))
    _run(data, "shell", "-c", FORGET_AND_ERASE)

    restored = _run(data, "memory_restore", "--force", str(backup))

    assert "Effacé à nouveau" in restored, restored
    assert _run(data, "shell", "-c", TOPICS).strip().splitlines()[-1] == "0 0"
