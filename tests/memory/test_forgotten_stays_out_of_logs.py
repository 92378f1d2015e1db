"""What the owner forgot or erased is not written to the service's log either (QA).

A topic forget with Qdrant down logged « forget 'ma dette de 4000 euros envers Paulo':
semantic candidates unavailable », a line that outlived the purge and the erase (the
Forgetting row's topic is redacted); a late extraction refused because the owner erased the
fact logged the candidate whole (« value='Le code de la porte est 4512' »); a late
statement of a forgotten fact logged its key. They name the forget and the fact by number.
"""

from __future__ import annotations

import logging

import pytest

from memory.models import Actor, Fact, Forgetting
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.facts import fact_forget, fact_store
from memory.services.forgetting import topic_forget
from memory.services.jobs import job_run
from tests.memory.test_erased_stays_erased import late_extraction  # noqa: F401

pytestmark = pytest.mark.django_db

TOPIC = "ma dette de 4000 euros envers Paulo"


def _said(caplog) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


def test_a_topic_forget_with_the_vector_store_down_logs_no_word_of_the_topic(
    settings, caplog, local_embedder
):
    from memory.stores.vectors import vector_store_reset

    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="dette_paulo", value="J'ai une dette de 4000 euros envers Paulo", actor="user")
    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    caplog.set_level(logging.DEBUG)
    try:
        result = topic_forget(topic=TOPIC, actor="user")
        forgetting_erase(forgetting_id=result.forgetting_id, actor="user")
    finally:
        vector_store_reset()

    assert Forgetting.objects.get(pk=result.forgetting_id).topic != TOPIC
    assert "semantic candidates unavailable" in _said(caplog)  # the outage is still said
    for word in ("Paulo", "dette", "4000"):
        assert word not in _said(caplog)


def test_a_late_extraction_of_an_erased_fact_logs_neither_its_key_nor_its_value(
    late_extraction,  # noqa: F811
    caplog,
):
    # INFO: at DEBUG the LLM client logs its requests, the exchange read (not erased) included.
    caplog.set_level(logging.INFO)
    fact_erase(fact=Fact.objects.get(key="code_porte"), actor=Actor.USER)

    assert job_run(late_extraction.id) == "done"

    assert not Fact.all_objects.filter(key="code_porte").exists()
    assert "4512" not in _said(caplog) and "code_porte" not in _said(caplog)


def test_a_late_extraction_of_a_forgotten_fact_does_not_log_its_key(
    late_extraction,  # noqa: F811
    caplog,
):
    # INFO: at DEBUG the LLM client logs its requests, the exchange read (not erased) included.
    caplog.set_level(logging.INFO)
    fact = Fact.objects.get(key="code_porte")
    fact_forget(fact=fact, actor=Actor.USER)

    assert job_run(late_extraction.id) == "done"

    assert Fact.all_objects.get(pk=fact.pk).forgotten
    assert f"#{fact.pk}" in _said(caplog)  # said, by number
    assert "4512" not in _said(caplog) and "code_porte" not in _said(caplog)


def test_a_statement_of_a_fact_its_owner_given_expiry_took_does_not_log_its_key(caplog):
    """An expired fact is forgotten by its expiry: its key stays out of the log too (QA 7a:
    « agent write to <key>.expires_at left as is », « <key> expired as the owner set »)."""
    from datetime import timedelta

    from django.utils import timezone

    fact, _ = fact_store(
        key="dette_zorglub_paulo", value="Je dois 4000 euros à Paulo", actor=Actor.USER, ttl="1h"
    )
    Fact.all_objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    caplog.set_level(logging.INFO)

    fact_store(key="dette_zorglub_paulo", value="Je dois 4000 euros à Paulo", actor=Actor.AGENT)

    said = _said(caplog)
    assert f"#{fact.pk}" in said
    assert "zorglub" not in said, said
