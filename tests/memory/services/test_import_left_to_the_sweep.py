"""An import run beside `serve` on the in-process broker leaves its rows to serve's sweep.

`memory_import` is its own process: the tasks it sent went to its own in-memory queue,
which no worker reads and which dies with it, and its rows were marked queued, so
serve's sweep left them alone for QUEUE_GRACE (2 minutes) before taking them. Rows
whose tasks cannot run are now left pending without a queued mark: the next sweep
takes them. Where a task does run (a broker other processes read, tasks run inline,
serve's own worker in this process), an import still sends them at once.
"""

from __future__ import annotations

import json

import pytest

from memory.models import IndexState, Message
from memory.services.index_queue import pending_sweep
from memory.services.portability import FORMAT_NAME
from memory.services.portability_import import memory_import

pytestmark = pytest.mark.django_db


def _export_file(tmp_path, messages: int):
    path = tmp_path / "export.jsonl"
    lines = [{"format": FORMAT_NAME, "version": 1, "exported_at": "2026-11-29T10:00:00+00:00"}]
    lines += [
        {
            "type": "message",
            "id": i + 1,
            "channel": "whatsapp",
            "role": "user",
            "author": "",
            "source": "user",
            "content": f"Message importé {i}",
            "created_at": "2026-09-01T10:00:00+02:00",
            "compacted": False,
            "reply_to": None,
        }
        for i in range(messages)
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_a_command_beside_serve_reaches_no_worker(settings):
    from makilab.runtime import tasks_reach_a_worker

    settings.CELERY_BROKER_URL = "memory://localhost/"

    assert not tasks_reach_a_worker()


def test_tasks_reach_a_worker_inline_or_in_serve(settings, eager_tasks, monkeypatch):
    from makilab.runtime import EmbeddedWorker, tasks_reach_a_worker

    settings.CELERY_BROKER_URL = "memory://localhost/"
    assert tasks_reach_a_worker()  # eager: every task runs inline
    eager_tasks.conf.task_always_eager = False
    monkeypatch.setattr(EmbeddedWorker, "running", True)
    assert tasks_reach_a_worker()  # serve's own worker reads this queue
    monkeypatch.setattr(EmbeddedWorker, "running", False)
    assert not tasks_reach_a_worker()


def test_an_import_whose_tasks_reach_no_worker_is_taken_by_the_next_sweep(
    tmp_path, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.CELERY_BROKER_URL = "memory://localhost/"
    from memory import tasks

    sent: list[list[int]] = []
    monkeypatch.setattr(tasks.index_batch_task, "delay", lambda kind, ids: sent.append(ids))

    with django_capture_on_commit_callbacks(execute=True):
        memory_import(path=_export_file(tmp_path, 5))

    imported = Message.objects.filter(channel="whatsapp")
    assert imported.count() == 5
    assert set(imported.values_list("index_state", flat=True)) == {IndexState.PENDING}
    assert sent == []  # nothing sent into a queue no worker reads
    assert pending_sweep()["message"] == 5  # serve's next sweep, not one 2 minutes later


def test_an_import_whose_tasks_run_still_sends_them(
    tmp_path, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/13"  # read by workers elsewhere
    from memory import tasks

    sent: list[list[int]] = []
    monkeypatch.setattr(tasks.index_batch_task, "delay", lambda kind, ids: sent.append(ids))

    with django_capture_on_commit_callbacks(execute=True):
        memory_import(path=_export_file(tmp_path, 5))

    assert sorted(i for ids in sent for i in ids) == sorted(
        Message.objects.filter(channel="whatsapp").values_list("id", flat=True)
    )
    assert pending_sweep()["message"] == 0  # queued: left to the tasks sent
