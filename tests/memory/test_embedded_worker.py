"""The embedded worker of `serve` (in-process broker) takes tasks back to back.

kombu's in-memory transport polls: each time the worker found no message it
could take (its queue empty, or its prefetch slot still held by a late-acked
task) it slept its polling interval, 1 s by default, so the worker ran one
task per second per thread whatever the CPU. The test records the sleeps the
transport asks for while twenty tasks run through the project's configuration.
"""

from __future__ import annotations

import time

import pytest
from celery import Celery
from kombu.transport.virtual import base as virtual_base

from makilab.runtime import EmbeddedWorker

pytestmark = pytest.mark.slow

TASKS = 20


def test_the_embedded_worker_never_sleeps_a_second_between_tasks(monkeypatch, settings):
    assert settings.CELERY_BROKER_URL.startswith("memory://")
    app = Celery("embedded-worker-test")
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.task_always_eager = False
    done: list[int] = []

    @app.task(name="tests.noop", acks_late=True)
    def noop(i: int) -> None:
        done.append(i)

    sleeps: list[float] = []
    real_sleep = virtual_base.sleep

    def recorded_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(virtual_base, "sleep", recorded_sleep)
    worker = EmbeddedWorker(app, concurrency=2)
    worker.start()
    try:
        for i in range(TASKS):
            noop.delay(i)
        deadline = time.monotonic() + 120  # a bound on a hang, not a speed assertion
        while len(done) < TASKS and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        worker.stop()
    assert sorted(done) == list(range(TASKS))
    assert sleeps, "the in-memory transport polled without sleeping: the probe is broken"
    assert max(sleeps) <= 0.05, f"the worker slept {max(sleeps)} s between tasks"
