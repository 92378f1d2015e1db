"""The embedded worker of `serve` (in-process broker) takes tasks back to back.

kombu's in-memory transport polls: each time the worker found no message it
could take (its queue empty, or its prefetch slot still held by a late-acked
task) it slept its polling interval, 1 s by default, so the worker ran one
task per second per thread whatever the CPU. The test runs twenty tasks
through `serve`'s worker class and the project's Celery configuration, in a
fresh process, and records the sleeps the transport asks for.
"""

from __future__ import annotations

import json

import pytest

from tests.memory.test_workers import SETUP, _env, _python

pytestmark = pytest.mark.slow

SCRIPT = (
    SETUP
    + """
import json, time
from celery import Celery
from kombu.transport.virtual import base as virtual_base
from makilab.runtime import EmbeddedWorker

app = Celery("embedded-worker-test")
app.config_from_object("django.conf:settings", namespace="CELERY")
done = []

@app.task(name="tests.noop", acks_late=True)
def noop(i):
    done.append(i)

sleeps = []
real_sleep = virtual_base.sleep
def recorded_sleep(seconds):
    sleeps.append(seconds)
    real_sleep(seconds)
virtual_base.sleep = recorded_sleep

worker = EmbeddedWorker(app, concurrency=2)
worker.start()
for i in range(20):
    noop.delay(i)
deadline = time.monotonic() + 120  # a bound on a hang, not a speed assertion
while len(done) < 20 and time.monotonic() < deadline:
    time.sleep(0.02)
worker.stop()
print(json.dumps({"done": sorted(done), "sleeps": sleeps, "broker": app.conf.broker_url}))
"""
)


def test_the_embedded_worker_never_sleeps_a_second_between_tasks(tmp_path):
    result = json.loads(_python(SCRIPT, _env(tmp_path)).strip().splitlines()[-1])
    assert result["broker"].startswith("memory://")
    assert result["done"] == list(range(20))
    sleeps = result["sleeps"]
    assert sleeps, "the in-memory transport polled without sleeping: the probe is broken"
    assert max(sleeps) <= 0.05, f"the worker slept {max(sleeps)} s between tasks"
