"""Logging filters: an idle service is quiet at INFO.

The Celery worker logs each task it receives and each success at INFO. The
periodic sweeps run every minute, so an idle service printed a few lines a
minute that said nothing. A periodic task's lines are dropped when it did
nothing (a result with no non-zero number: 0, None, {'message': 0, ...});
a sweep that found work, every other task and every warning stay.
"""

from __future__ import annotations

import logging
import re

RECEIVED_LOGGER = "celery.worker.strategy"
SUCCESS_LOGGER = "celery.app.trace"
_NONZERO = re.compile(r"(?<![\w.])0*[1-9]")


def _periodic_tasks() -> frozenset[str]:
    from makilab.celery import app

    return frozenset(entry["task"] for entry in app.conf.beat_schedule.values())


def did_nothing(return_value: str) -> bool:
    """A task's result (its repr) counts nothing: no non-zero number in it."""
    return not _NONZERO.search(return_value or "")


class QuietIdleSweeps(logging.Filter):
    """On the worker's loggers: drop the INFO lines of periodic tasks that did nothing."""

    _periodic: frozenset[str] | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or record.name not in (RECEIVED_LOGGER, SUCCESS_LOGGER):
            return True
        context = record.args if isinstance(record.args, dict) else {}
        if QuietIdleSweeps._periodic is None:
            QuietIdleSweeps._periodic = _periodic_tasks()
        if context.get("name") not in QuietIdleSweeps._periodic:
            return True
        if record.name == RECEIVED_LOGGER:
            return False  # its success line (if it did something) says more
        return not did_nothing(str(context.get("return_value", "")))


class ClientErrorAsWarning(logging.Filter):
    """On django.security.DisallowedHost: a Host header the site does not serve is the
    client's error (answered with a French 400), logged as one warning line, where Django
    logs an ERROR with the exception's traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = None
        return True
