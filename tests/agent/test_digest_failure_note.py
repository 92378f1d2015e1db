"""A digest that fails says why in French, without a Python class name (QA).

The note is what the owner reads on /memory (« Salons observés ») and GET /digest: it was
« LlmUnavailable: Le LLM (Anthropic) est indisponible… », and an unexpected error put its
class and English text there (« OperationalError: database is locked »)."""

from __future__ import annotations

import logging
import re

import pytest

from agent.digest import DIGEST_CRASHED_NOTE, digest_run_now
from memory.models import Digest, DigestState
from memory.services.channels import channel_settings_set
from memory.services.messages import message_save
from tests.dashboard.conftest import HTMX
from tests.fakes.anthropic import server_error

pytestmark = pytest.mark.django_db

CLASS_NAME_FIRST = re.compile(r"^[A-Z][A-Za-z]+: ")


def _room_with_a_message(django_capture_on_commit_callbacks):
    channel_settings_set(channel="lobby", observed=True)
    with django_capture_on_commit_callbacks(execute=True):
        message_save(
            channel="lobby",
            role="user",
            content="Marie commence un nouveau travail lundi",
            author="david",
        )


def test_an_llm_failure_is_noted_in_its_own_french_words(
    vector_store,
    local_embedder,
    fake_anthropic,
    eager_tasks,
    settings,
    staff_client,
    django_capture_on_commit_callbacks,
):
    settings.ANTHROPIC_MAX_RETRIES = 0
    _room_with_a_message(django_capture_on_commit_callbacks)
    fake_anthropic.script(server_error())
    with django_capture_on_commit_callbacks(execute=True):
        digest_run_now()

    digest = Digest.objects.order_by("-id").first()
    assert digest.state == DigestState.FAILED
    assert digest.note.startswith("Le LLM"), digest.note
    assert not CLASS_NAME_FIRST.match(digest.note)
    page = re.sub(r"<[^>]+>", " ", staff_client.get("/memory/rooms/", **HTMX).content.decode())
    assert digest.note in page
    assert staff_client.get("/api/v1/memory/digest").json()["last"]["note"] == digest.note


def test_an_unexpected_error_is_noted_in_french_and_logged_whole(
    vector_store,
    local_embedder,
    fake_anthropic,
    eager_tasks,
    settings,
    monkeypatch,
    caplog,
    django_capture_on_commit_callbacks,
):
    from django.db import OperationalError

    _room_with_a_message(django_capture_on_commit_callbacks)

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr("agent.digest.digest_extract", locked)
    with caplog.at_level(logging.ERROR, logger="agent.digest"):
        with django_capture_on_commit_callbacks(execute=True):
            digest_run_now()

    digest = Digest.objects.order_by("-id").first()
    assert digest.state == DigestState.FAILED
    assert digest.note == DIGEST_CRASHED_NOTE
    assert "OperationalError" in caplog.text and "database is locked" in caplog.text
