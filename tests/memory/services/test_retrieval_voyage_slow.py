"""The pre-hook with Voyage slow: each message keeps to the semantic source's limit, and
a slow Voyage does not keep costing the next messages their semantic source once it
answers again (its query no longer holds the pool's threads for the indexing policy's
20 s, retries and Retry-After waits)."""

from __future__ import annotations

import json
import time

import pytest

from memory.services.retrieval import auto_retrieve
from memory.stores.embedders import embedder_reset
from tests.fakes.voyage import FakeVoyage, Reply

pytestmark = pytest.mark.django_db(transaction=True)

# More slow messages than the semantic pool has threads (pipeline._semantic_pool).
SLOW_MESSAGES = 4


@pytest.fixture
def slow_then_healthy_voyage(settings, vector_store):
    embedder_reset()
    with FakeVoyage() as fake:
        settings.VOYAGE_API_KEY = "pa-test-key"
        settings.VOYAGE_BASE_URL = fake.base_url
        settings.VOYAGE_TIMEOUT_S = 20.0  # the documented default
        settings.VOYAGE_MAX_RETRIES = 0
        # The production limit: the suite's default is generous (tests/settings.py).
        settings.RETRIEVAL_TIMEOUTS_MS = {**settings.RETRIEVAL_TIMEOUTS_MS, "semantic": 1000}
        # Voyage hangs on the next requests (they end, much later, in a 500 so the stuck
        # server threads stop without touching any store), then answers at once.
        fake.script(
            *[
                Reply(500, json.dumps({"detail": "slow"}).encode(), delay_s=12.0)
                for _ in range(SLOW_MESSAGES)
            ]
        )
        yield fake
    embedder_reset()


def test_a_slow_voyage_does_not_cost_the_next_messages_their_semantic_source(
    slow_then_healthy_voyage, settings
):
    limit_s = settings.RETRIEVAL_TIMEOUTS_MS["semantic"] / 1000
    for i in range(SLOW_MESSAGES):  # while Voyage hangs: each message answers on time
        started = time.monotonic()
        result = auto_retrieve(
            message=f"Quel est le code du garage pour le vélo numéro {i} ?", channel="whatsapp"
        )
        assert time.monotonic() - started < limit_s + 1.0
        assert "semantic" in result.failed_sources

    # Voyage answers at once again: the next message gets its semantic source.
    result = auto_retrieve(message="Où ai-je rangé la pompe du vélo rouge ?", channel="whatsapp")
    assert "semantic" not in result.failed_sources, result.failed_sources
