"""Review of f1d25dc (low: no real trigger shown): runtime.EmbeddedWorker._supervise builds
each new WorkController outside its try, so an error while building one (a restart after a
stop) ends the supervisor thread for good, while EmbeddedWorker.running stays True
(tasks_reach_a_worker says a worker runs): the same « every later row pending until serve
restarts » the commit fixed for a worker's own stop. Before the change a build error at
start raised in serve's main thread, where it was seen."""

from __future__ import annotations

import time

import makilab.runtime as runtime


class _Worker:
    def start(self):
        time.sleep(0.01)  # stops on its own at once

    def stop(self):
        pass


class _App:
    def __init__(self):
        self.made = 0

    def WorkController(self, **kwargs):
        self.made += 1
        if self.made == 2:
            raise OSError("un échec passager")
        return _Worker()


def test_a_worker_that_fails_to_build_once_is_built_again(monkeypatch):
    monkeypatch.setattr(runtime, "RESTART_DELAY_S", 0.02)
    monkeypatch.setattr(runtime, "RESTART_DELAY_MAX_S", 0.05)
    app = _App()
    worker = runtime.EmbeddedWorker(app, concurrency=1)
    worker.start()
    try:
        deadline = time.monotonic() + 3
        while app.made < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert app.made >= 3, (
            f"no worker built after the failed build (supervisor alive: "
            f"{worker._thread.is_alive()}, running: {runtime.EmbeddedWorker.running})"
        )
    finally:
        worker.stop()
