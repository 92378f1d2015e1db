"""Qdrant down and the embedder failing: saving works at once, nothing is lost, the sweep catches up."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Fact, IndexState, Message
from memory.services.facts import fact_store
from memory.services.indexing import pending_sweep
from memory.services.messages import message_save
from memory.stores.embedders import embedder_reset
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store, vector_store_reset
from tests.fakes.voyage import FakeVoyage, error_reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def voyage():
    with FakeVoyage() as fake:
        yield fake


def test_rows_stay_pending_during_the_outage_and_the_sweep_indexes_them_after(
    settings, tmp_path, voyage, eager_tasks, django_capture_on_commit_callbacks
):
    settings.VOYAGE_API_KEY = "test-key"
    settings.VOYAGE_BASE_URL = voyage.base_url
    settings.VOYAGE_MAX_RETRIES = 0
    settings.QDRANT_URL = "http://127.0.0.1:9"  # Qdrant down
    settings.QDRANT_TIMEOUT_S = 1
    voyage.script(*[error_reply(500, "internal error") for _ in range(200)])
    embedder_reset()
    vector_store_reset()
    try:
        with django_capture_on_commit_callbacks(execute=True):
            for i in range(5):
                question = message_save(
                    channel="whatsapp", role="user", content=f"Question {i} sur le vélo"
                )
                message_save(
                    channel="whatsapp",
                    role="assistant",
                    content=f"Réponse {i}",
                    reply_to_id=question.id,
                )
            fact_store(key="bike", value="Le vélo est au garage")
        # Saving succeeded; every task ran and failed; nothing was marked indexed.
        assert Message.objects.count() == 10
        assert set(Message.objects.values_list("index_state", flat=True)) == {IndexState.PENDING}
        fact = Fact.objects.get(key="bike")
        assert fact.index_state == IndexState.PENDING
        assert fact.index_attempts >= 1 and "injoignable" in fact.index_error

        # Both come back: the embedder answers again, Qdrant (embedded here) is reachable.
        with voyage._lock:
            voyage._script.clear()
        vector_store_reset()
        settings.QDRANT_URL = ""
        settings.QDRANT_PATH = tmp_path / "qdrant"
        counts = pending_sweep(now=timezone.now() + timedelta(days=2))
        assert counts["message"] == 5 and counts["fact"] == 1
        assert set(Message.objects.values_list("index_state", flat=True)) == {IndexState.INDEXED}
        assert Fact.objects.get(key="bike").index_state == IndexState.INDEXED
        store = get_vector_store()
        assert store.count(CONVERSATIONS) == 5
        assert store.count(KNOWLEDGE) == 1
    finally:
        embedder_reset()
        vector_store_reset()


def test_a_malformed_embedding_marks_the_row_failed_and_stores_no_vector(
    settings, tmp_path, voyage
):
    from memory.services.indexing import KIND_FACT, index_row
    from tests.fakes.voyage import Reply

    settings.VOYAGE_API_KEY = "test-key"
    settings.VOYAGE_BASE_URL = voyage.base_url
    settings.VOYAGE_MAX_RETRIES = 0
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    embedder_reset()
    vector_store_reset()
    try:
        fact, _ = fact_store(key="k", value="valeur")
        voyage.script(
            Reply(200, b'{"object": "list", "data": [{"object": "embedding", "embedding": [NaN')
        )
        index_row(KIND_FACT, fact.id)
        fact.refresh_from_db()
        assert fact.index_state == IndexState.FAILED
        assert fact.index_error
        store = get_vector_store()
        assert store.collection_dimension(KNOWLEDGE) is None or store.count(KNOWLEDGE) == 0
    finally:
        embedder_reset()
        vector_store_reset()
