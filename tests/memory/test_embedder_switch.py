"""An embedder switch that keeps the vector size (voyage-3 → voyage-3.5, say).

The dimension check alone lets the new model's query vectors be compared with
the old model's points: cosines between two unrelated spaces, ranked as if they
meant something, and new points of the new model mixed into the old collection.
Each collection records the embedder that filled it; a search, an upsert or an
indexing run by another embedder is refused as a dimension change is (the
search falls back to keywords, the rows end failed without a paid call), the
doctor says so, and `reindex --recreate` (or `memory_doctor --fix`) rebuilds.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.exceptions import DimensionMismatch, EmbedderMismatch, StoreUnavailable
from memory.models import Fact, IndexState
from memory.services.facts import fact_store
from memory.services.maintenance import memory_doctor
from memory.services.search_semantic import semantic_hits
from memory.stores.vectors import KNOWLEDGE, VectorPoint, point_id
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db


class NewModel(HashEmbedder):
    """Another model of the same dimension: its vectors live in another space."""

    name = "test:another-model"

    def vector(self, text: str) -> list[float]:
        return list(reversed(super().vector(text)))


def _facts_indexed_with(monkeypatch, embedder) -> None:
    install(monkeypatch, embedder)
    fact_store(key="velo", value="Le vélo bleu est rangé dans la cave")
    fact_store(key="chat", value="Le chat s'appelle Moustache")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())


def test_a_collection_records_the_embedder_that_filled_it(vector_store, monkeypatch):
    _facts_indexed_with(monkeypatch, HashEmbedder())

    assert vector_store.collection_embedder(KNOWLEDGE) == HashEmbedder.name


def test_a_search_by_another_model_of_the_same_dimension_is_refused(vector_store, monkeypatch):
    _facts_indexed_with(monkeypatch, HashEmbedder())
    install(monkeypatch, NewModel())

    with pytest.raises(EmbedderMismatch) as refused:
        vector_store.search(KNOWLEDGE, NewModel().vector("vélo"), limit=5)
    assert isinstance(refused.value, DimensionMismatch)  # every caller's fallback applies
    assert "reindex --recreate" in str(refused.value)
    assert HashEmbedder.name in str(refused.value) and NewModel.name in str(refused.value)
    # The user's search says the semantic part is unavailable, never ranks by noise.
    with pytest.raises(StoreUnavailable, match="reindex --recreate"):
        semantic_hits("vélo", limit=5)


def test_no_vector_of_another_model_is_written_into_the_collection(vector_store, monkeypatch):
    _facts_indexed_with(monkeypatch, HashEmbedder())
    new = NewModel()
    install(monkeypatch, new)

    with pytest.raises(EmbedderMismatch):
        vector_store.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 99), new.vector("x"), {})])
    fact, _ = fact_store(key="jardin", value="Les tomates du jardin sont mûres")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())

    fact.refresh_from_db()
    assert fact.index_state == IndexState.FAILED
    assert "reindex --recreate" in fact.index_error
    assert new.document_calls == []  # refused before any (paid) embedding
    assert point_id("fact", fact.id) not in set(vector_store.iter_ids(KNOWLEDGE))


def test_the_doctor_names_the_switch_and_its_fix_rebuilds_with_the_new_model(
    vector_store, monkeypatch
):
    _facts_indexed_with(monkeypatch, HashEmbedder())
    new = NewModel()
    install(monkeypatch, new)

    report = memory_doctor(collection="knowledge")[0]
    assert not report.healthy
    assert (report.found_embedder, report.expected_embedder) == (HashEmbedder.name, new.name)
    out = StringIO()
    with pytest.raises(CommandError):  # differences found: exit status 1
        call_command("memory_doctor", "--collection", "knowledge", stdout=out, stderr=out)
    assert f"embedder {HashEmbedder.name} au lieu de {new.name}" in out.getvalue()

    call_command("memory_doctor", "--fix", "--collection", "knowledge", stdout=StringIO())

    assert vector_store.collection_embedder(KNOWLEDGE) == new.name
    assert vector_store.count(KNOWLEDGE) == Fact.objects.count() == 2
    hits = vector_store.search(KNOWLEDGE, new.vector("vélo bleu cave"), limit=1)
    assert hits[0].id == point_id("fact", Fact.objects.get(key="velo").id)


def test_reindex_recreate_rebuilds_with_the_new_model(vector_store, monkeypatch):
    _facts_indexed_with(monkeypatch, HashEmbedder())
    install(monkeypatch, NewModel())

    call_command("reindex", "--recreate", stdout=StringIO(), stderr=StringIO())

    assert vector_store.collection_embedder(KNOWLEDGE) == NewModel.name
    assert Fact.objects.exclude(index_state=IndexState.INDEXED).count() == 0


def test_a_collection_from_before_the_record_is_adopted_by_the_embedder_in_use(
    tmp_path, monkeypatch
):
    from memory.stores.vectors_edge import EdgeVectorStore

    install(monkeypatch, HashEmbedder())
    store = EdgeVectorStore(tmp_path / "q")
    store.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), HashEmbedder().vector("a"), {})])
    store.close()
    (tmp_path / "q" / KNOWLEDGE / "makilab_embedder.json").unlink()  # an older version's folder

    reopened = EdgeVectorStore(tmp_path / "q")
    assert reopened.collection_embedder(KNOWLEDGE) == HashEmbedder.name
    assert len(reopened.search(KNOWLEDGE, HashEmbedder().vector("a"), limit=1)) == 1
    reopened.close()
    # Adopted for good: a later switch is caught.
    install(monkeypatch, NewModel())
    again = EdgeVectorStore(tmp_path / "q")
    with pytest.raises(EmbedderMismatch):
        again.search(KNOWLEDGE, NewModel().vector("a"), limit=1)
    again.close()


def test_the_server_store_records_and_checks_the_embedder(monkeypatch):
    from qdrant_client import QdrantClient

    from memory.stores.vectors_server import ServerVectorStore

    client = QdrantClient(location=":memory:")
    install(monkeypatch, HashEmbedder())
    store = ServerVectorStore(client=client)
    store.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), HashEmbedder().vector("a"), {})])
    assert store.collection_embedder(KNOWLEDGE) == HashEmbedder.name

    install(monkeypatch, NewModel())
    other_process = ServerVectorStore(client=client)
    with pytest.raises(EmbedderMismatch):
        other_process.search(KNOWLEDGE, NewModel().vector("a"), limit=1)
    with pytest.raises(EmbedderMismatch):
        store.search(KNOWLEDGE, NewModel().vector("a"), limit=1)


def test_a_task_that_embedded_before_a_switch_writes_the_new_models_vectors(
    vector_store, monkeypatch
):
    from memory.services import index_claims, indexing
    from memory.services.indexing import fact_text

    install(monkeypatch, HashEmbedder())
    fact, _ = fact_store(key="velo", value="Le vélo bleu est rangé dans la cave")
    claim = index_claims.index_claim(indexing.KIND_FACT, [fact.id])
    indexing.index_embed(claim)  # the old model's vectors, the collection not created yet
    new = NewModel()
    install(monkeypatch, new)

    indexing.index_write(claim)

    assert vector_store.collection_embedder(KNOWLEDGE) == new.name
    [point] = vector_store.retrieve(KNOWLEDGE, [point_id("fact", fact.id)], with_vectors=True)
    assert point.vector == pytest.approx(new.vector(fact_text(fact)))
    fact.refresh_from_db()
    assert fact.index_state == IndexState.INDEXED


def test_a_process_left_on_the_old_model_cannot_fill_the_collection_rebuilt_for_the_new(
    monkeypatch,
):
    """A Qdrant server shared by serve (restarted on the new model, collection rebuilt)
    and a worker still running the old settings: its writes are refused, its cached
    view of the collection notwithstanding."""
    from qdrant_client import QdrantClient

    from memory.stores.vectors_server import ServerVectorStore

    client = QdrantClient(location=":memory:")
    old, new = HashEmbedder(), NewModel()
    install(monkeypatch, old)
    worker, serve = ServerVectorStore(client=client), ServerVectorStore(client=client)
    worker.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), old.vector("a"), {})])
    assert worker.search(KNOWLEDGE, old.vector("a"), limit=1)  # its view is cached

    install(monkeypatch, new)  # serve's process
    serve.drop_collection(KNOWLEDGE)
    serve.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 2), new.vector("b"), {})])

    with pytest.raises(EmbedderMismatch):  # the worker's process, on the old settings
        worker.upsert(
            KNOWLEDGE, [VectorPoint(point_id("fact", 3), old.vector("c"), {})], embedder=old.name
        )
    assert sorted(serve.iter_ids(KNOWLEDGE)) == [point_id("fact", 2)]
