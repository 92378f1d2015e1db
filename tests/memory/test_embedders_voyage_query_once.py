"""The pre-hook's query to Voyage (``embed_query_once``) fails fast: one attempt within
the limit it is given, no retry, no Retry-After wait. ``embed_query`` (searches, forgets)
keeps the indexing policy."""

from __future__ import annotations

import time

import pytest

from memory.exceptions import EmbeddingError
from memory.stores.embedders_voyage import VoyageEmbedder
from tests.fakes.voyage import FakeVoyage, Reply, error_reply


def voyage(fake: FakeVoyage) -> VoyageEmbedder:
    """The documented policy: 20 s per request, 4 retries, Retry-After honoured."""
    return VoyageEmbedder(
        api_key="pa-test-key", base_url=fake.base_url, backoff_base_s=0.01, backoff_max_s=0.02
    )


def test_it_gives_up_at_its_limit_instead_of_the_indexing_timeout(fake_voyage):
    embedder = voyage(fake_voyage)
    embedder.embed_query("chauffe")  # the SDK's first import is not what is timed
    fake_voyage.script(Reply(delay_s=3.0))
    started = time.monotonic()

    with pytest.raises(EmbeddingError):
        embedder.embed_query_once("le vélo rouge", timeout_s=0.3)

    assert time.monotonic() - started < 1.5
    assert len(fake_voyage.requests) == 2


@pytest.mark.parametrize(
    "reply",
    [
        error_reply(429, "slow down", {"Retry-After": "2"}),
        error_reply(503, "busy"),
    ],
    ids=["429-retry-after", "503"],
)
def test_it_makes_one_attempt_and_waits_for_nothing(fake_voyage, reply):
    embedder = voyage(fake_voyage)
    embedder.embed_query("chauffe")  # the SDK's first import is not what is timed
    fake_voyage.script(reply)
    started = time.monotonic()

    with pytest.raises(EmbeddingError):
        embedder.embed_query_once("le vélo rouge", timeout_s=1.0)

    assert time.monotonic() - started < 1.0
    assert len(fake_voyage.requests) == 2


def test_its_vector_is_the_query_vector_and_is_cached(fake_voyage):
    embedder = voyage(fake_voyage)

    vector = embedder.embed_query_once("le vélo rouge", timeout_s=1.0)

    assert fake_voyage.requests[0].json["input_type"] == "query"
    assert embedder.embed_query("le vélo rouge") == vector
    assert len(fake_voyage.requests) == 1


def test_embed_query_still_retries_and_honours_retry_after(fake_voyage):
    fake_voyage.script(error_reply(429, "slow down", {"Retry-After": "1"}))

    vector = voyage(fake_voyage).embed_query("le vélo rouge")

    assert len(vector) == 1024
    assert len(fake_voyage.requests) == 2
    assert fake_voyage.requests[1].at - fake_voyage.requests[0].at >= 0.95
