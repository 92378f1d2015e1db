"""Which Voyage refusals are about the text: only 400 and 422 (EmbeddingInvalid, the row
ends failed). 403 (Voyage: the caller's IP is blocked), 401 and any other refusal leave
the row pending, to be retried later (EmbeddingError), with a French message that never
carries the raw response headers."""

from __future__ import annotations

import json

import pytest

from memory.exceptions import EmbeddingError, EmbeddingInvalid, StoreUnavailable
from memory.models import Fact, IndexState
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_row
from memory.stores.embedders import embedder_reset
from memory.stores.embedders_voyage import VoyageEmbedder
from memory.stores.vectors import vector_store_reset
from tests.fakes.voyage import FakeVoyage, Reply, error_reply

IP_BLOCKED = "Your IP address is not allowed to access this API."
# A header only the raw response carries: it must not reach a stored message.
HEADERS = {"X-Request-Id": "req-header-only-7f3a"}


def voyage(fake: FakeVoyage) -> VoyageEmbedder:
    return VoyageEmbedder(
        api_key="pa-test-key", base_url=fake.base_url, timeout_s=5.0, max_retries=2
    )


def test_a_403_is_an_outage_in_french_not_retried_in_the_request(fake_voyage):
    fake_voyage.script(error_reply(403, IP_BLOCKED, HEADERS))

    with pytest.raises(EmbeddingError) as caught:
        voyage(fake_voyage).embed_documents(["texte"])

    message = str(caught.value)
    assert "Voyage AI refuse l'accès (HTTP 403) : adresse IP bloquée ?" in message
    assert IP_BLOCKED in message
    assert "req-header-only-7f3a" not in message and "Content-Type" not in message
    assert len(fake_voyage.requests) == 1


@pytest.mark.parametrize("status", [401, 404, 409])
def test_other_refusals_are_outages_too(fake_voyage, status):
    fake_voyage.script(error_reply(status, "refused", HEADERS))

    with pytest.raises(EmbeddingError) as caught:
        voyage(fake_voyage).embed_documents(["texte"])

    assert f"HTTP {status}" in str(caught.value)
    assert "req-header-only-7f3a" not in str(caught.value)


@pytest.mark.parametrize("status", [400, 422])
def test_only_400_and_422_are_refusals_of_the_text(fake_voyage, status):
    fake_voyage.script(error_reply(status, "input too long"))

    with pytest.raises(EmbeddingInvalid, match="input too long"):
        voyage(fake_voyage).embed_documents(["texte"])
    assert len(fake_voyage.requests) == 1


@pytest.mark.parametrize(
    ("status", "expected"),
    [(400, EmbeddingInvalid), (422, EmbeddingInvalid), (403, EmbeddingError)],
)
def test_a_body_that_is_not_voyages_is_sorted_by_its_status_alone(fake_voyage, status, expected):
    """A proxy's own error body (no "detail"): the SDK raises a bare APIError."""
    fake_voyage.script(Reply(status, json.dumps({"error": "proxy says no"}).encode(), HEADERS))

    with pytest.raises(expected) as caught:
        voyage(fake_voyage).embed_documents(["texte"])

    assert "req-header-only-7f3a" not in str(caught.value)
    assert len(fake_voyage.requests) == 1


@pytest.mark.django_db
def test_a_403_ip_block_during_indexing_leaves_the_row_pending_not_failed(
    settings, tmp_path, fake_voyage
):
    settings.VOYAGE_API_KEY = "pa-test-key"
    settings.VOYAGE_BASE_URL = fake_voyage.base_url
    settings.VOYAGE_MAX_RETRIES = 0
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    embedder_reset()
    vector_store_reset()
    try:
        fact, _ = fact_store(key="velo", value="Le vélo est au garage")
        fake_voyage.script(error_reply(403, IP_BLOCKED, HEADERS))

        # Transient: recorded on the row, then re-raised for the task's retry.
        with pytest.raises(StoreUnavailable):
            index_row(KIND_FACT, fact.id)

        fact = Fact.all_objects.get(pk=fact.pk)
        assert fact.index_state == IndexState.PENDING, fact.index_error
        assert "HTTP 403" in fact.index_error
        assert "req-header-only-7f3a" not in fact.index_error

        # Unblocked: the next attempt indexes it.
        index_row(KIND_FACT, fact.id)
        assert Fact.all_objects.get(pk=fact.pk).index_state == IndexState.INDEXED
    finally:
        vector_store_reset()
