"""A backlog larger than one sweep is indexed at the worker's pace, not one sweep a minute.

The sweep sends at most SWEEP_BATCH due rows. A backlog of thousands (an import made
beside `serve`, whose tasks cannot reach its in-process queue; a restart after a
crash) went at 512 rows a minute: 16 batches in 4 s, then nothing until the next
beat. A sweep that found a full batch now sends the next sweep itself, behind the
batches it sent, until it finds less.
"""

from __future__ import annotations

import json
import logging

import pytest

from memory.models import IndexState, Message
from memory.services import index_queue
from memory.services.messages import message_save
from memory.stores.vectors import CONVERSATIONS
from tests.memory.test_workers import SETUP, _env, _python, _save_exchanges

SWEEP_LIMIT = 6


def _backlog(exchanges: int) -> None:
    """Exchanges saved with no task sent (their on-commit sends never run in a test), and
    their queued marks voided as `serve` voids them at start (restart_recover)."""
    for i in range(exchanges):
        question = message_save(channel="whatsapp", role="user", content=f"Question {i} : le vélo")
        message_save(
            channel="whatsapp", role="assistant", content=f"Réponse {i}", reply_to_id=question.id
        )
    index_queue.restart_recover()


@pytest.mark.django_db
def test_one_sweep_goes_on_until_the_backlog_is_sent(
    monkeypatch, eager_tasks, vector_store, local_embedder
):
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    # More than one task fills (batch_fill: a task takes other due rows up to INDEX_BATCH).
    exchanges = index_queue.INDEX_BATCH + 2 * SWEEP_LIMIT
    _backlog(exchanges)

    from memory import tasks

    tasks.pending_sweep_task.delay()

    states = set(Message.objects.values_list("index_state", flat=True))
    assert states == {IndexState.INDEXED}
    assert vector_store.count(CONVERSATIONS) == exchanges


@pytest.mark.django_db
def test_a_sweep_that_found_less_than_its_batch_sends_no_other(monkeypatch, eager_tasks):
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    from memory import tasks

    sent = []
    monkeypatch.setattr(tasks.index_batch_task, "delay", lambda *args: None)
    monkeypatch.setattr(tasks.pending_sweep_task, "delay", lambda: sent.append("sweep"))
    _backlog(2)  # 4 rows, under the batch

    index_queue.pending_sweep()

    assert sent == []


@pytest.mark.django_db
def test_rows_a_sweep_sent_are_not_read_again_by_the_next(monkeypatch, eager_tasks):
    """Replies are read with their roots: each is marked queued, so a chain of sweeps reads
    new rows every time and ends, whatever the tasks sent did (here: nothing)."""
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    from memory import tasks

    sweeps = []
    monkeypatch.setattr(tasks.index_batch_task, "delay", lambda *args: None)
    monkeypatch.setattr(tasks.pending_sweep_task, "delay", lambda: sweeps.append(1))
    _backlog(3 * SWEEP_LIMIT)  # 6 batches of rows

    while True:
        before = len(sweeps)
        index_queue.pending_sweep()
        if len(sweeps) == before:
            break
        assert len(sweeps) <= 10, "the chain of sweeps does not end"

    assert len(sweeps) == 6
    pending = Message.objects.filter(index_state=IndexState.PENDING)
    assert not pending.filter(index_queued_at__isnull=True).exists()


@pytest.mark.django_db
def test_a_broker_down_leaves_the_rest_to_the_beat(monkeypatch, eager_tasks, caplog):
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    from memory import tasks

    def down(*args):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.index_batch_task, "delay", down)
    monkeypatch.setattr(tasks.pending_sweep_task, "delay", down)
    _backlog(2 * SWEEP_LIMIT)

    with caplog.at_level(logging.WARNING, logger="memory.services.index_queue"):
        counts = index_queue.pending_sweep()  # never raises

    assert counts["message"] > 0
    assert any("next sweep" in record.getMessage() for record in caplog.records)


WORKER = (
    SETUP
    + """
import json, time
from makilab.celery import app
from makilab.runtime import EmbeddedWorker
from memory import tasks
from memory.models import Message
from memory.services import index_queue

index_queue.SWEEP_BATCH = %d
index_queue.restart_recover()  # as serve starts: the crashed process's queue is gone
worker = EmbeddedWorker(app, concurrency=2)  # serve's worker, without its beat
worker.start()
tasks.pending_sweep_task.delay()  # the one sweep serve sends at start
deadline = time.monotonic() + 180  # a bound on a hang, not a speed assertion
while time.monotonic() < deadline:
    pending = Message.objects.filter(index_state="pending").count()
    if not pending:
        break
    time.sleep(0.2)
worker.stop()
print(json.dumps({"pending": pending, "indexed": Message.objects.filter(index_state="indexed").count()}))
"""
)


@pytest.mark.slow
def test_serves_worker_catches_up_a_backlog_from_the_one_sweep_at_start(tmp_path):
    """A backlog left by a process that died before its in-memory queue ran: `serve`'s
    own worker and broker index every row from the sweep sent at start, with no beat."""
    env = _env(tmp_path)
    _python(
        SETUP
        + "from django.core.management import call_command; call_command('migrate', verbosity=0)",
        env,
    )
    _save_exchanges(env, 60)  # its tasks die with its in-memory queue

    out = _python(WORKER % 8, env, timeout=300)

    assert json.loads(out.strip().splitlines()[-1]) == {"pending": 0, "indexed": 120}
