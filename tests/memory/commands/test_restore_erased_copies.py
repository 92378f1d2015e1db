"""A backup restored with --force over a memory that erased things since it was taken:
the erased text must not come back through the copies the erasure redacted either (the
retrieval logs and the admin's history, both read paths: /api/memory/retrievals, the
/memory page's log, the admin), and an erased forget restored from its undo window must
not come back undoable with its topic in clear."""

from __future__ import annotations

import pytest

from tests.memory.commands.test_backup_restore import _run

pytestmark = pytest.mark.slow

SEED = (
    "from memory.services.facts import fact_store; "
    "from memory.models import Fact, MemoryRetrieval; "
    "from django.contrib.admin.models import LogEntry, CHANGE; "
    "from django.contrib.contenttypes.models import ContentType; "
    "from django.contrib.auth import get_user_model; "
    "fact_store(key='code_garage', value='Le code du garage est B4242Z'); "
    "f = Fact.objects.get(key='code_garage'); "
    "fact_store(key='velo', value='Le vélo est gris'); "
    "MemoryRetrieval.objects.create(channel='whatsapp', message_preview='Quel est le code ?', "
    "memories=[{'id': f'fact:{f.id}', 'kind': 'fact', 'text': 'Le code du garage est B4242Z'}]); "
    "u = get_user_model().objects.create_user(username='owner', password='x', is_staff=True); "
    "LogEntry.objects.create(user=u, content_type=ContentType.objects.get_for_model(f), "
    "object_id=str(f.id), object_repr='code_garage = Le code du garage est B4242Z', "
    "action_flag=CHANGE, change_message='[]')"
)
ERASE = (
    "from memory.models import Fact; from memory.services.erasing import fact_erase; "
    "fact_erase(fact=Fact.all_objects.get(key='code_garage'), actor='user')"
)
LOOK = (
    "from memory.models import Fact, MemoryRetrieval; "
    "from django.contrib.admin.models import LogEntry; "
    "print(Fact.all_objects.filter(value__contains='B4242Z').count(), "
    "sum('B4242Z' in str(r.memories) for r in MemoryRetrieval.objects.all()), "
    "LogEntry.objects.filter(object_repr__contains='B4242Z').count(), "
    "Fact.objects.filter(key='velo').count())"
)
MARKS = (
    "from memory.models import ErasedMark; "
    "print(sorted(m.isoformat() for m in ErasedMark.objects.values_list('erased_at', flat=True)))"
)


def _last_line(data, code):
    return _run(data, "shell", "-c", code).strip().splitlines()[-1]


def test_a_forced_restore_does_not_bring_back_an_erased_fact_in_the_logs(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED)
    assert _last_line(data, LOOK) == "1 1 1 1"
    _run(data, "memory_backup", str(backup))
    _run(data, "shell", "-c", ERASE)
    # The erasure itself redacts both copies in the live memory.
    assert _last_line(data, LOOK) == "0 0 0 1"
    marks = _last_line(data, MARKS)

    restored = _run(data, "memory_restore", "--force", str(backup))

    assert "Effacé à nouveau" in restored, restored
    # No fact row, retrieval-log copy or admin-history line holds the erased text again;
    # the fact that was not erased is back.
    assert _last_line(data, LOOK) == "0 0 0 1"
    # The marks kept are dated as they were (UTC, not shifted by the local time zone).
    assert _last_line(data, MARKS) == marks


SEED_FORGET = (
    "from memory.services.messages import message_save; "
    "from memory.services.facts import fact_store; "
    "from memory.services.forgetting import topic_forget; "
    "q = message_save(channel='whatsapp', role='user', content='Le code du garage est B4242Z'); "
    "message_save(channel='whatsapp', role='assistant', content='Noté.', reply_to_id=q.id); "
    "fact_store(key='code_garage', value='Le code du garage est B4242Z', source_message_id=q.id); "
    "fact_store(key='velo', value='Le vélo est gris'); "
    "topic_forget(topic='code garage', actor='user')"
)
ERASE_FORGET = (
    "from memory.models import Forgetting; from memory.services.erasing import forgetting_erase; "
    "forgetting_erase(forgetting_id=Forgetting.objects.get().id, actor='user')"
)
LOOK_FORGET = (
    "from memory.models import Fact, Forgetting; "
    "print(Forgetting.objects.filter(topic__icontains='garage').count(), "
    "list(Forgetting.objects.values_list('topic', 'state')), "
    "Fact.objects.filter(key='velo').count())"
)


def test_a_forced_restore_does_not_bring_back_the_topic_of_an_erased_forget(tmp_path):
    data, backup = tmp_path / "data", tmp_path / "sauvegarde"
    _run(data, "migrate", "--verbosity", "0")
    _run(data, "shell", "-c", SEED_FORGET)
    _run(data, "memory_backup", str(backup))  # taken during the forget's undo window
    _run(data, "shell", "-c", ERASE_FORGET)  # then "erase now"
    erased = "0 [('[sujet effacé]', 'purged')] 1"
    assert _last_line(data, LOOK_FORGET) == erased

    restored = _run(data, "memory_restore", "--force", str(backup))

    assert "Effacé à nouveau" in restored, restored
    # The restored forget is marked as its purge marks it: no topic, no longer undoable.
    assert _last_line(data, LOOK_FORGET) == erased
