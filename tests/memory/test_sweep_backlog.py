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
from django.db.models import Q

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
    monkeypatch.setattr(tasks.pending_sweep_task, "apply_async", lambda **kw: sent.append(kw))
    _backlog(2)  # 4 rows, under the batch

    index_queue.pending_sweep()

    assert sent == []


def _worker_fake(monkeypatch, *, indexes: bool) -> tuple[list[list[int]], list[dict]]:
    """The tasks a sweep sends, recorded; ``indexes``: each batch is indexed at once (its
    roots and their replies), as a worker that keeps up would."""
    from memory import tasks

    batches: list[list[int]] = []
    sweeps: list[dict] = []

    def index(kind, ids):
        batches.append(list(ids))
        if indexes:
            Message.objects.filter(Q(pk__in=ids) | Q(reply_to_id__in=ids)).update(
                index_state=IndexState.INDEXED
            )

    monkeypatch.setattr(tasks.index_batch_task, "delay", index)
    monkeypatch.setattr(
        tasks.pending_sweep_task, "apply_async", lambda **options: sweeps.append(options)
    )
    return batches, sweeps


@pytest.mark.django_db
def test_a_chain_sends_each_row_once_and_ends(monkeypatch):
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    batches, sweeps = _worker_fake(monkeypatch, indexes=True)
    _backlog(3 * SWEEP_LIMIT)  # 36 rows: 6 sweeps of 6

    index_queue.pending_sweep()
    while sweeps and len(sweeps) <= 10:
        link = sweeps.pop()
        assert link["kwargs"] == {"chained": True} and not link.get("countdown")
        index_queue.pending_sweep(chained=True)

    assert not sweeps, "the chain of sweeps does not end"
    sent = [i for batch in batches for i in batch]
    assert sorted(sent) == sorted(
        Message.objects.filter(reply_to__isnull=True).values_list("id", flat=True)
    )
    assert not Message.objects.filter(index_state=IndexState.PENDING).exists()


@pytest.mark.django_db
def test_a_sweep_while_the_worker_is_behind_sends_nothing_more(monkeypatch):
    """The worker has a full sweep's rows still to do (several workers took the next link at
    once, or a second chain started): the queue does not grow; the link looks again later."""
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    batches, sweeps = _worker_fake(monkeypatch, indexes=False)
    _backlog(3 * SWEEP_LIMIT)
    index_queue.pending_sweep()
    queued = Message.objects.filter(index_queued_at__isnull=False).count()
    sweeps.clear()

    assert index_queue.pending_sweep(chained=True) == {"message": 0, "fact": 0, "summary": 0}
    assert Message.objects.filter(index_queued_at__isnull=False).count() == queued
    assert [link["countdown"] for link in sweeps] == [index_queue.SWEEP_WAIT_S]
    sweeps.clear()
    index_queue.pending_sweep()  # the periodic one: it neither reads nor starts a chain
    assert (len(batches), sweeps) == (1, [])


@pytest.mark.django_db
def test_a_broker_down_leaves_the_rest_to_the_beat(monkeypatch, eager_tasks, caplog):
    monkeypatch.setattr(index_queue, "SWEEP_BATCH", SWEEP_LIMIT)
    from memory import tasks

    def down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.index_batch_task, "delay", down)
    monkeypatch.setattr(tasks.pending_sweep_task, "apply_async", down)
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
