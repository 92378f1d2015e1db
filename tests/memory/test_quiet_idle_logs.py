"""An idle service says nothing at INFO: the periodic sweeps that found nothing are not logged.

The worker logs every task it receives and every success at INFO; with sweeps
every minute an idle service printed a few lines a minute. Work stays visible:
a sweep that found something, and any other task, are still logged.
"""

from __future__ import annotations

import logging
import signal
import time

import pytest

from tests.memory.test_workers import (
    MIGRATE,
    _env,
    _free_port,
    _python,
    _save_exchanges,
    _start_serve,
)


def _record(name: str, fmt: str, context: dict) -> logging.LogRecord:
    return logging.LogRecord(name, logging.INFO, __file__, 1, fmt, (context,), None)


@pytest.mark.parametrize(
    ("logger", "context", "kept"),
    [
        ("celery.worker.strategy", {"name": "memory.pending_sweep", "id": "1"}, False),
        ("celery.app.trace", {"name": "memory.jobs_sweep", "return_value": "0"}, False),
        (
            "celery.app.trace",
            {"name": "memory.pending_sweep", "return_value": "{'message': 0, 'fact': 0}"},
            False,
        ),
        ("celery.app.trace", {"name": "memory.logs_purge", "return_value": "None"}, False),
        (
            "celery.app.trace",
            {"name": "memory.pending_sweep", "return_value": "{'message': 3, 'fact': 0}"},
            True,
        ),
        ("celery.app.trace", {"name": "memory.expired_purge", "return_value": "2"}, True),
        ("celery.worker.strategy", {"name": "memory.message_index", "id": "2"}, True),
        ("celery.app.trace", {"name": "memory.message_index", "return_value": "None"}, True),
    ],
)
def test_the_filter_drops_only_the_lines_of_sweeps_that_did_nothing(logger, context, kept):
    from makilab.logfilters import QuietIdleSweeps

    record = _record(logger, "Task %(name)s[%(id)s] x", context)
    assert QuietIdleSweeps().filter(record) is kept


def test_a_warning_of_a_sweep_is_always_kept():
    from makilab.logfilters import QuietIdleSweeps

    record = _record("celery.app.trace", "%(name)s", {"name": "memory.jobs_sweep"})
    record.levelno = logging.WARNING
    assert QuietIdleSweeps().filter(record)


@pytest.mark.slow
def test_an_idle_serve_at_info_logs_only_what_its_sweeps_found(tmp_path):
    env = _env(tmp_path, MAKILAB_LOG_LEVEL="INFO")
    _python(MIGRATE, env)
    _save_exchanges(env, 2)  # pending: the first sweep finds them
    server = _start_serve(env, _free_port(), "--no-migrate")
    try:
        time.sleep(12)  # every periodic task runs once about 2 s after start
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    assert "Arrêté." in out, out[-3000:]
    assert "memory.pending_sweep" in out and "'message': 2" in out, out[-3000:]
    for quiet in (
        "memory.jobs_sweep",
        "memory.expired_purge",
        "memory.forgettings_purge",
        "memory.logs_purge",
    ):
        assert quiet not in out, out[-3000:]
    assert not [line for line in out.splitlines() if "pending_sweep" in line and "received" in line]
    assert "memory.index_batch" in out  # the work the sweep queued stays visible
