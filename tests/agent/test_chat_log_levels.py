"""The chat's 503 without an LLM is a configuration state, not a failure: one warning line
in the service's log, where Django logs every 5xx as an ERROR. Real 5xx stay ERRORs."""

from __future__ import annotations

import logging

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.fakes.anthropic import overloaded

pytestmark = pytest.mark.django_db

URL = "/api/v1/agent/chat"
STREAM_URL = "/api/v1/agent/chat/stream"
BODY = {"channel": "whatsapp", "message": "Tu es là ?"}


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept_logs():
    """Every record of the service's log: Django's loggers do not propagate to the root."""
    kept = _Kept()
    loggers = [logging.getLogger(), logging.getLogger("django")]
    for logger in loggers:
        logger.addHandler(kept)
    yield kept.records
    for logger in loggers:
        logger.removeHandler(kept)


@pytest.fixture
def agent_client(django_user_model):
    user = django_user_model.objects.create_user(username="gateway", password=None)
    # A real 500 reaches Django's handler (and its log), as in production, not the test.
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _errors(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.levelno >= logging.ERROR]


def _request_lines(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.name == "django.request"]


@pytest.mark.parametrize("path", [URL, STREAM_URL])
def test_the_503_without_an_llm_is_one_warning_line(agent_client, kept_logs, settings, path):
    settings.ANTHROPIC_API_KEY = ""

    response = agent_client.post(path, BODY, format="json", HTTP_ACCEPT="application/json")

    assert response.status_code == 503
    assert _errors(kept_logs) == []
    [line] = _request_lines(kept_logs)
    assert (line.levelno, line.exc_info) == (logging.WARNING, None)
    assert path in line.getMessage()


def test_an_unexpected_500_is_still_an_error(agent_client, kept_logs, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr("agent.api.views.handle_message", broken)

    response = agent_client.post(URL, BODY, format="json")

    assert response.status_code == 500
    [line] = _request_lines(kept_logs)
    assert line.levelno == logging.ERROR
    assert line.exc_info is not None


def test_anthropic_down_is_still_an_error(agent_client, kept_logs, fake_anthropic, settings):
    """Anthropic unavailable is an outage, not a configuration state."""
    settings.AGENT_COALESCE_SECONDS = 0
    settings.ANTHROPIC_MAX_RETRIES = 0
    fake_anthropic.script(overloaded())

    response = agent_client.post(URL, BODY, format="json")

    assert response.status_code == 503
    assert [r.levelno for r in _request_lines(kept_logs)] == [logging.ERROR]
