"""QDRANT_URL may carry credentials (the basic auth of a proxy in front of Qdrant): only
qdrant-client gets them. The store's messages, and so the retrieval log shown on
/memory, rows' index_error and StoreUnavailable, show the URL as http://***@host."""

from __future__ import annotations

import httpx
import pytest

from memory.exceptions import StoreUnavailable
from memory.models import Fact, MemoryRetrieval
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_row
from memory.services.retrieval import auto_retrieve
from memory.services.retrieval.log import retrieval_logs_wait
from memory.stores.vectors import vector_store_reset
from memory.stores.vectors_server import ServerVectorStore

SECRET = "s3cr3t-qdrant-pass"
URL = f"http://admin:{SECRET}@127.0.0.1:9"


class _QuotingClient:
    """A client whose transport error quotes the URL it was given (as httpx may)."""

    def collection_exists(self, name):
        raise httpx.ConnectError(f"cannot reach {URL}/collections/{name}")


def test_the_store_shows_its_url_without_the_password():
    store = ServerVectorStore(URL, client=_QuotingClient())

    with pytest.raises(StoreUnavailable) as caught:
        store.collection_dimension("knowledge")

    assert SECRET not in str(caught.value) and SECRET not in repr(store)
    assert "http://***@127.0.0.1:9" in str(caught.value)


@pytest.mark.django_db
def test_the_password_is_not_in_the_retrieval_log_nor_the_index_error(settings, local_embedder):
    vector_store_reset()
    settings.QDRANT_URL = URL  # nothing listens on port 9: Qdrant is down
    settings.QDRANT_TIMEOUT_S = 1
    try:
        fact, _ = fact_store(key="velo", value="Le vélo rouge est au garage")
        with pytest.raises(StoreUnavailable) as caught:
            index_row(KIND_FACT, fact.id)  # transient: recorded on the row, then re-raised
        result = auto_retrieve(message="Où est le vélo rouge ?", channel="whatsapp")
        retrieval_logs_wait()
    finally:
        vector_store_reset()

    assert SECRET not in str(caught.value)
    assert "semantic" in result.failed_sources
    assert SECRET not in str(result.failed_sources)
    logged = list(MemoryRetrieval.objects.values_list("failed_sources", flat=True))
    assert logged and SECRET not in str(logged)
    index_error = Fact.all_objects.get(pk=fact.pk).index_error
    assert index_error and SECRET not in index_error
