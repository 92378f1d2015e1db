"""The embedded worker of `serve` (in-process broker) takes tasks back to back, and sleeps when idle.

kombu's in-memory transport polls: each time the worker found no message it
could take (its queue empty, or its prefetch slot still held by a late-acked
task) it slept its polling interval. At 1 s, kombu's default, the worker ran one
task per second per thread whatever the CPU; at 10 ms it woke `serve` a hundred
times a second, idle or not. The project's transport (makilab.broker) waits for a
put, an ack or a reject.

The tests run tasks through `serve`'s worker class and the project's Celery
configuration, in a fresh process, and record the transport's sleeps and waits.
"""

from __future__ import annotations

import json

import pytest

from tests.memory.test_workers import MIGRATE, SETUP, _env, _python

pytestmark = pytest.mark.slow

# The project's Celery configuration on a test app, and serve's worker class.
APP = (
    SETUP
    + """
import json, os, threading, time
from celery import Celery
from makilab.runtime import EmbeddedWorker

app = Celery("embedded-worker-test")
app.config_from_object("django.conf:settings", namespace="CELERY")
"""
)

SCRIPT = (
    APP
    + """
from kombu.transport.virtual import base as virtual_base
import makilab.broker as broker
done = []

@app.task(name="tests.noop", acks_late=True)
def noop(i):
    done.append(i)

# Every sleep kombu's polling would take, and every wait of the project's transport:
# whether it ended on a change (True) or at the worker's timeout (False), and how many
# tasks were done when it began.
sleeps, waits = [], []
real_sleep = virtual_base.sleep
def recorded_sleep(seconds):
    sleeps.append(seconds)
    real_sleep(seconds)
virtual_base.sleep = recorded_sleep

class RecordedCondition:
    def __init__(self, condition):
        self.condition = condition
    def __enter__(self):
        return self.condition.__enter__()
    def __exit__(self, *exc):
        return self.condition.__exit__(*exc)
    def notify_all(self):
        self.condition.notify_all()
    def wait(self, timeout=None):
        began_with = len(done)
        changed = self.condition.wait(timeout)
        waits.append({"changed": changed, "done_before": began_with})
        return changed
broker._changed = RecordedCondition(broker._changed)

worker = EmbeddedWorker(app, concurrency=2)
worker.start()
for i in range(20):
    noop.delay(i)
deadline = time.monotonic() + 120  # a bound on a hang, not a speed assertion
while len(done) < 20 and time.monotonic() < deadline:
    time.sleep(0.02)
busy_waits = list(waits)
# Idle: the queue empty, nothing acked. A polling worker wakes a hundred times here.
time.sleep(1.0)
idle_waits = waits[len(busy_waits):]
worker.stop()
print(json.dumps({
    "done": sorted(done), "sleeps": sleeps, "busy_waits": busy_waits,
    "idle_waits": idle_waits, "broker": app.conf.broker_url,
    "transport": app.conf.broker_transport,
}))
"""
)


def test_the_embedded_worker_takes_tasks_back_to_back_and_never_polls(tmp_path):
    result = json.loads(_python(SCRIPT, _env(tmp_path)).strip().splitlines()[-1])
    assert result["broker"].startswith("memory://")
    assert result["transport"] == "makilab.broker:Transport"
    assert result["done"] == list(range(20))
    # It never sleeps to look again: it waits for a change.
    assert result["sleeps"] == []
    # While tasks were queued, every wait ended on a put or an ack, never at the worker's
    # timeout: a slot freed by a late ack wakes it at once.
    busy = [w for w in result["busy_waits"] if w["done_before"] < 20]
    assert busy, "the worker never waited: the probe is broken"
    assert all(w["changed"] for w in busy), busy
    # Idle, it sleeps through: at most its loop's own 2 s timeout ends a wait.
    assert len(result["idle_waits"]) <= 1, result["idle_waits"]


PRIORITY_SCRIPT = (
    APP
    + """
seen = []

@app.task(name="tests.priority")
def priority(where):
    seen.append((where, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))

main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
priority.apply(args=("inline",))  # eager, in this (a request's) thread
worker = EmbeddedWorker(app, concurrency=2)
worker.start()
for _ in range(4):
    priority.delay("worker")
deadline = time.monotonic() + 120  # a bound on a hang, not a speed assertion
while len(seen) < 5 and time.monotonic() < deadline:
    time.sleep(0.02)
worker.stop()
print(json.dumps({
    "seen": seen, "main_before": main_before,
    "main_after": os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
}))
"""
)


def test_the_worker_runs_its_tasks_below_the_requests(tmp_path):
    """Beside serve's two worker threads indexing a burst, a pre-hook over HTTP took p50
    96-100 ms against 25-27 on the quiet service (`benchmark serve-indexing`): the
    threads shared the cores alike. The worker's threads now run their tasks at a lower
    priority (nice 10): 35-41 ms, a POST p50 20-30 ms against 40-43, and the worker indexed
    as fast. A task run inline, in a request's thread, leaves that thread as it was."""
    result = json.loads(_python(PRIORITY_SCRIPT, _env(tmp_path)).strip().splitlines()[-1])
    worker = [nice for where, nice in result["seen"] if where == "worker"]
    inline = [nice for where, nice in result["seen"] if where == "inline"]
    assert len(worker) == 4 and set(worker) == {10}, result
    assert inline == [result["main_before"]], result
    assert result["main_after"] == result["main_before"], result


CONNECTIONS_SCRIPT = (
    MIGRATE
    + """
import json, os, threading, time
from celery import Celery
from django.db import connection
from makilab.runtime import EmbeddedWorker
import memory.db.backend.base as backend

app = Celery("embedded-worker-test")
app.config_from_object("django.conf:settings", namespace="CELERY")

opened = []
real_open = backend.DatabaseWrapper.get_new_connection
def counted_open(self, params):
    opened.append(threading.get_ident())
    return real_open(self, params)
backend.DatabaseWrapper.get_new_connection = counted_open

seen = []

@app.task(name="tests.reads", acks_late=True)
def reads(i):
    from memory.models import Message
    Message.objects.count()
    seen.append((i, connection.get_autocommit()))

@app.task(name="tests.leaves_a_transaction_open", acks_late=True)
def leaves_a_transaction_open():
    from memory.models import Message
    connection.set_autocommit(False)  # never restored: a task's bug
    Message.objects.count()
    seen.append(("open", connection.get_autocommit()))

worker = EmbeddedWorker(app, concurrency=2)
worker.start()
for i in range(20):
    reads.delay(i)
deadline = time.monotonic() + 120  # a bound on a hang, not a speed assertion
while len(seen) < 20 and time.monotonic() < deadline:
    time.sleep(0.02)
opened_by_20 = len(opened)
leaves_a_transaction_open.delay()
for i in range(20, 30):
    reads.delay(i)
while len(seen) < 31 and time.monotonic() < deadline:
    time.sleep(0.02)
worker.stop()
print(json.dumps({"seen": seen, "opened_by_20": opened_by_20, "opened": len(opened)}))
"""
)


def test_the_worker_threads_keep_their_database_connection_between_tasks(tmp_path):
    """Celery's Django fixup closed every connection before and after each task: each task
    opened SQLite again (its schema read, the pragmas, the key function), 1.7-2.3 ms of
    CPU against 0.2-0.3 for a reused connection, one task per message posted in a burst.
    Each worker thread now keeps its connection, and Django's own rule closes one left
    unusable or in a state a task must not inherit (here: autocommit left off)."""
    result = json.loads(_python(CONNECTIONS_SCRIPT, _env(tmp_path)).strip().splitlines()[-1])
    reads = [(i, autocommit) for i, autocommit in result["seen"] if i != "open"]
    assert sorted(i for i, _ in reads) == list(range(30)), result
    # One connection a worker thread for the first twenty tasks (two threads).
    assert result["opened_by_20"] <= 2, result
    # The task that left autocommit off ran, and the tasks after it got autocommit back.
    assert ["open", False] in result["seen"], result
    assert all(autocommit for _, autocommit in reads), result
