"""One text the embedder cannot represent fails its own row, not the batch it rode in.

A task embeds its row with the other due rows of the kind (index_queue.batch_fill, up to
32). An invalid vector in the embedder's answer (Voyage's zero vector for one text) made
validate_vectors refuse the whole answer, and every row of the batch ended ``failed``,
which the sweep never sends again (QA 7b): the owner's fact batched beside it had no
point until an operator ran `memory_doctor --fix`.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, IndexState
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, batch_fill, index_rows
from memory.stores.embedders import embedder_reset
from memory.stores.vectors import get_vector_store, point_id, vector_store_reset
from tests.fakes.voyage import FakeVoyage, Reply

pytestmark = pytest.mark.django_db

UNREPRESENTABLE = "Texte que le modèle ne sait pas représenter"


@pytest.fixture
def voyage_zero_for_one_text(settings, tmp_path):
    """Voyage on a fake server that answers a zero vector for one text, every time."""
    with FakeVoyage() as voyage:
        settings.VOYAGE_API_KEY = "test-key"
        settings.VOYAGE_BASE_URL = voyage.base_url
        settings.VOYAGE_MAX_RETRIES = 0
        settings.QDRANT_URL = ""
        settings.QDRANT_PATH = tmp_path / "qdrant"
        embedder_reset()
        vector_store_reset()

        def zero_for_one(request: dict) -> dict:
            vectors = [
                [0.0] * voyage.dimension
                if UNREPRESENTABLE in text
                else voyage.expected_vector(text, request.get("input_type"))
                for text in request["input"]
            ]
            return voyage.success_document(request, vectors=vectors)

        voyage.script(*[Reply(200, zero_for_one) for _ in range(10)])
        try:
            yield voyage
        finally:
            embedder_reset()
            vector_store_reset()


def test_the_rows_batched_beside_an_invalid_vector_are_indexed(voyage_zero_for_one_text):
    owner, _ = fact_store(key="medecin", value="Mon médecin est le Dr Martin", actor=Actor.USER)
    other, _ = fact_store(key="bizarre", value=UNREPRESENTABLE, actor=Actor.AGENT)
    third, _ = fact_store(key="velo", value="Le vélo rouge est au garage", actor=Actor.USER)

    # The bad row's own task, as memory.tasks runs it: its batch holds the others too.
    batch = batch_fill(KIND_FACT, [other.pk])
    assert {owner.pk, third.pk} <= set(batch)
    report = index_rows(KIND_FACT, batch)

    states = dict(Fact.all_objects.values_list("pk", "index_state"))
    assert states[other.pk] == IndexState.FAILED
    assert states[owner.pk] == states[third.pk] == IndexState.INDEXED
    assert (report.indexed, report.failed) == (2, 1)
    assert "norme nulle" in Fact.all_objects.get(pk=other.pk).index_error
    stored = get_vector_store().retrieve("knowledge", [point_id(KIND_FACT, owner.pk)])
    assert [p.payload["version"] for p in stored] == [Fact.all_objects.get(pk=owner.pk).version]


def test_a_row_alone_with_an_invalid_vector_still_fails_at_once(voyage_zero_for_one_text):
    other, _ = fact_store(key="bizarre", value=UNREPRESENTABLE, actor=Actor.AGENT)

    index_rows(KIND_FACT, [other.pk])

    assert Fact.all_objects.get(pk=other.pk).index_state == IndexState.FAILED
    assert len(voyage_zero_for_one_text.requests) == 1  # not embedded a second time
