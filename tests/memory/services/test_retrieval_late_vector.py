"""A lone pre-hook waits for a query the bundled engine embeds on every core before its SQL:
a vector later than the semantic source's limit, or none at all, still leaves the pre-hook
on time with what T1 and the keywords found."""

from __future__ import annotations

import logging
import time

import pytest

from memory.services.channels import channel_settings_set
from memory.services.facts import fact_store
from memory.services.retrieval import auto_retrieve
from memory.services.retrieval.result import MSG_SOURCE_FAILED
from memory.stores.embedders import LocalEmbedder
from tests.memory.services.test_retrieval import _exchange, _index_all, world  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def memory(world, eager_tasks, django_capture_on_commit_callbacks):  # noqa: F811
    from tests.memory.test_observed_rooms import room_says

    _exchange("whatsapp", "Le vélo de route est chez Mickael pour le dérailleur", "Noté !")
    fact_store(key="velo_reparation", value="Le vélo est au garage de Mickael, rue Solférino")
    fact_store(key="portail_code", value="Le code du portail est 4821")
    channel_settings_set(channel="lobby", observed=True)
    with django_capture_on_commit_callbacks(execute=True):
        room_says("Mickael a fini la réparation du vélo de Paul")
    _index_all()
    return world


def test_a_vector_later_than_its_limit_leaves_the_pre_hook_on_time(memory, settings, monkeypatch):
    """The embedding outlasts the semantic source's limit: the searches wait for it in
    their pools, the pre-hook answers with T1 and the keywords at its limit."""
    settings.RETRIEVAL_TIMEOUTS_MS = {
        **settings.RETRIEVAL_TIMEOUTS_MS,
        "semantic": 300,
        "live": 300,
    }
    slow = LocalEmbedder.embed_query

    def late(self, text):
        time.sleep(0.8)
        return slow(self, text)

    monkeypatch.setattr(LocalEmbedder, "embed_query", late)
    started = time.monotonic()
    result = auto_retrieve(message="Le code du portail ?", channel="whatsapp")
    elapsed = time.monotonic() - started

    assert result.failed_sources["semantic"].startswith("timeout")
    assert "live" in result.failed_sources
    assert elapsed < 0.75
    assert any(m["id"].startswith("fact:") for m in result.memories)  # by its words


def test_an_embedding_that_fails_is_recorded_and_the_rest_comes(memory, monkeypatch):
    def broken(self, text):
        raise RuntimeError("moteur en panne")

    monkeypatch.setattr(LocalEmbedder, "embed_query", broken)
    result = auto_retrieve(message="Le code du portail ?", channel="whatsapp")

    # An unexpected error is said by a French note (its text goes to the service's log).
    assert result.failed_sources["semantic"] == MSG_SOURCE_FAILED
    assert "live" in result.failed_sources
    assert any(m["id"].startswith("fact:") for m in result.memories)


def test_the_message_language_is_read_once_for_both_searches(memory, settings, monkeypatch):
    """The semantic and the live searches both correct for the message's language: the
    pre-hook reads it once and gives it to both (neither thread reads it again)."""
    from memory.services import language
    from memory.services.retrieval import semantic

    # Both searches must run (a first query in a fresh process may load the engine's team).
    settings.RETRIEVAL_TIMEOUTS_MS = {
        **settings.RETRIEVAL_TIMEOUTS_MS,
        "semantic": 30_000,
        "live": 30_000,
    }

    message = "Où est le vélo de Paul ?"
    read: list[str] = []
    real = language.text_language

    def counted(text):
        read.append(text)
        return real(text)

    monkeypatch.setattr(language, "text_language", counted)
    monkeypatch.setattr(semantic, "text_language", counted)
    result = auto_retrieve(message=message, channel="whatsapp")

    assert not result.failed_sources
    assert result.live  # the live search ran and found the room's extract
    assert read.count(message) == 1


def test_a_fusion_that_fails_is_logged_once_by_its_source(memory, monkeypatch, caplog):
    """It was logged twice (the pipeline's own line, then failure_text's, naming no source)."""
    from memory.services.retrieval import pipeline

    def broken(*args, **kwargs):
        raise RuntimeError("fusion en panne")

    monkeypatch.setattr(pipeline, "fuse", broken)
    with caplog.at_level(logging.WARNING, logger="memory.services.retrieval"):
        result = auto_retrieve(message="Le code du portail ?", channel="whatsapp")

    assert result.failed_sources["fusion"] == MSG_SOURCE_FAILED
    lines = [r.getMessage() for r in caplog.records if "fusion" in r.getMessage()]
    assert lines == ["auto-retrieval source fusion failed: RuntimeError: fusion en panne"]
