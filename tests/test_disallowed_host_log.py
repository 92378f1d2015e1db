"""A request with a Host the site does not serve is the client's error: a French 400 and
one warning line, not an ERROR with a traceback in the service's log."""

from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.django_db


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_bad_host_is_one_warning_without_a_traceback(client):
    logger = logging.getLogger("django.security.DisallowedHost")
    kept = _Kept()
    logger.addHandler(kept)
    try:
        response = client.get("/login/", HTTP_HOST="evil.example")
    finally:
        logger.removeHandler(kept)

    assert response.status_code == 400
    assert [(r.levelno, r.exc_info) for r in kept.records] == [(logging.WARNING, None)]
    assert "evil.example" in kept.records[0].getMessage()
