"""Voyage names each vector's text by its "index": vectors are matched to texts by it,
never by their position in the answer, and an answer whose indexes are not exactly
0..n-1 is refused (EmbeddingInvalid), through the real voyageai SDK against a fake."""

from __future__ import annotations

import pytest

from memory.exceptions import EmbeddingInvalid
from memory.stores.embedders_voyage import VoyageEmbedder
from tests.fakes.voyage import FakeVoyage, Reply


def voyage(fake: FakeVoyage) -> VoyageEmbedder:
    return VoyageEmbedder(
        api_key="pa-test-key",
        base_url=fake.base_url,
        timeout_s=5.0,
        max_retries=0,
        backoff_base_s=0.01,
        backoff_max_s=0.02,
    )


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def answer_with(fake: FakeVoyage, change) -> Reply:
    """The real answer (float lists), its "data" changed by ``change``."""

    def build(request):
        document = fake.success_document({**request, "encoding_format": None})
        change(document["data"])
        return document

    return Reply(body=build)


def test_vectors_sent_back_in_another_order_are_matched_to_their_texts_by_index(fake_voyage):
    fake_voyage.script(answer_with(fake_voyage, lambda data: data.reverse()))
    texts = ["Le vélo est au garage", "Mon fils s'appelle Léo", "J'aime le café"]

    vectors = voyage(fake_voyage).embed_documents(texts)

    for text, vector in zip(texts, vectors, strict=True):
        expected = fake_voyage.expected_vector(text, "document")
        assert cosine(vector, expected) == pytest.approx(1.0, abs=1e-6), text


def _all_zero(data):
    for item in data:
        item["index"] = 0


def _shifted(data):
    for item in data:
        item["index"] += 1


def _one_missing(data):
    del data[1]["index"]


def _as_text(data):
    for item in data:
        item["index"] = str(item["index"])


@pytest.mark.parametrize(
    "change",
    [_all_zero, _shifted, _one_missing, _as_text],
    ids=["duplicate", "shifted", "missing", "text"],
)
def test_indexes_that_are_not_exactly_0_to_n_minus_1_are_refused_as_invalid(fake_voyage, change):
    """Two vectors both claiming text 0 (and none for text 1) answer neither text."""
    fake_voyage.script(answer_with(fake_voyage, change))

    with pytest.raises(EmbeddingInvalid):
        voyage(fake_voyage).embed_documents(["un", "deux"])
    assert len(fake_voyage.requests) == 1  # not retried: the same answer would come back
