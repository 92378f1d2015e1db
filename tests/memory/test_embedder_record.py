"""The embedder record of a collection never stands in the way of forgetting, and follows
a rebuild made by another process (audit of the record, 2026-11-29).

- A forget's point removal batched with a document is written before the embedding,
  so a refused embedder (or one that is down) does not keep the forgotten text.
- A record that cannot be read or written blocks no delete; searches and writes are
  refused until `memory_doctor --fix` (or `reindex --recreate`) rebuilds.
- A Qdrant server's record is read again before a search is refused, and after
  RECORD_REFRESH_S, so a rebuild by another process is followed both ways.
"""

from __future__ import annotations

import os
from io import StringIO

import pytest
from django.core.management import call_command

from memory.exceptions import EmbedderMismatch
from memory.models import Fact, IndexState
from memory.services import index_claims, indexing
from memory.services.facts import fact_forget, fact_store
from memory.stores.edge_engine import EDGE_EMBEDDER_FILE
from memory.stores.vectors import KNOWLEDGE, VectorPoint, point_id
from memory.stores.vectors_edge import EdgeVectorStore
from tests.fakes.embedder import HashEmbedder, install
from tests.memory.test_embedder_switch import NewModel


def _forgotten_after_a_switch(vector_store, monkeypatch) -> tuple[Fact, Fact]:
    install(monkeypatch, HashEmbedder())
    old, _ = fact_store(key="velo", value="Le vélo bleu est rangé dans la cave")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())
    assert point_id("fact", old.id) in set(vector_store.iter_ids(KNOWLEDGE))
    install(monkeypatch, NewModel())  # VOYAGE_MODEL changed, `reindex --recreate` not run yet
    fact_forget(fact=Fact.all_objects.get(pk=old.id), actor="owner")
    new, _ = fact_store(key="chat", value="Le chat s'appelle Moustache")
    return old, new


@pytest.mark.django_db
def test_a_forgotten_facts_point_goes_even_when_its_task_embeds_for_a_refused_model(
    vector_store, monkeypatch
):
    old, new = _forgotten_after_a_switch(vector_store, monkeypatch)

    # One task: the forget's row and another due row (batch_fill, the sweep, reindex).
    indexing.index_rows(indexing.KIND_FACT, [old.id, new.id])

    assert point_id("fact", old.id) not in set(vector_store.iter_ids(KNOWLEDGE))
    assert Fact.all_objects.get(pk=old.id).index_state == IndexState.INDEXED  # removed
    assert Fact.all_objects.get(pk=new.id).index_state == IndexState.FAILED  # asks a rebuild


@pytest.mark.django_db
def test_a_forgotten_facts_point_goes_before_a_late_writers_embedding(vector_store, monkeypatch):
    old, new = _forgotten_after_a_switch(vector_store, monkeypatch)
    claim = index_claims.index_claim(indexing.KIND_FACT, [old.id, new.id])

    indexing.index_embed(claim)

    assert point_id("fact", old.id) not in set(vector_store.iter_ids(KNOWLEDGE))


@pytest.mark.django_db
def test_plain_reindex_after_a_switch_still_removes_forgotten_points(vector_store, monkeypatch):
    old, _ = _forgotten_after_a_switch(vector_store, monkeypatch)

    call_command("reindex", stdout=StringIO(), stderr=StringIO())

    assert point_id("fact", old.id) not in set(vector_store.iter_ids(KNOWLEDGE))


def _filled(tmp_path, monkeypatch):
    install(monkeypatch, HashEmbedder())
    store = EdgeVectorStore(tmp_path / "q")
    store.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), HashEmbedder().vector("a"), {})])
    store.close()
    return tmp_path / "q" / KNOWLEDGE / EDGE_EMBEDDER_FILE


def test_a_point_is_deleted_whatever_the_record_file_holds(tmp_path, monkeypatch):
    _filled(tmp_path, monkeypatch).write_text("")  # truncated: a crash, a bad copy

    store = EdgeVectorStore(tmp_path / "q")
    try:
        with pytest.raises(EmbedderMismatch, match="reindex --recreate"):
            store.search(KNOWLEDGE, HashEmbedder().vector("a"), limit=1)
        store.delete(KNOWLEDGE, [point_id("fact", 1)])  # a forget, an erasure
        assert store.count(KNOWLEDGE) == 0
    finally:
        store.close()


def test_a_point_is_deleted_when_the_adoption_cannot_write_its_record(tmp_path, monkeypatch):
    _filled(tmp_path, monkeypatch).unlink()  # a folder from before the record

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # a collection folder that refuses writes
    store = EdgeVectorStore(tmp_path / "q")
    try:
        store.delete(KNOWLEDGE, [point_id("fact", 1)])
        assert store.count(KNOWLEDGE) == 0
        assert store.collection_embedder(KNOWLEDGE) == HashEmbedder.name  # in this process
    finally:
        monkeypatch.undo()
        store.close()


@pytest.mark.django_db
def test_the_doctors_fix_rebuilds_a_collection_whose_record_is_unreadable(
    vector_store, monkeypatch
):
    from memory.stores.vectors import get_vector_store, vector_store_reset

    install(monkeypatch, HashEmbedder())
    fact, _ = fact_store(key="velo", value="Le vélo bleu est rangé dans la cave")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())
    folder = vector_store.path
    vector_store_reset()
    (folder / KNOWLEDGE / EDGE_EMBEDDER_FILE).write_text("")

    out = StringIO()
    call_command("memory_doctor", "--fix", "--collection", "knowledge", stdout=out)

    assert "reindex --recreate" in out.getvalue() and "réparé" in out.getvalue()
    store = get_vector_store()
    assert store.collection_embedder(KNOWLEDGE) == HashEmbedder.name
    assert set(store.iter_ids(KNOWLEDGE)) == {point_id("fact", fact.id)}


def _shared_server():
    from qdrant_client import QdrantClient

    from memory.stores.vectors_server import ServerVectorStore

    client = QdrantClient(location=":memory:")
    return lambda: ServerVectorStore(client=client)


def test_a_server_search_follows_a_rebuild_for_its_model_made_elsewhere(monkeypatch):
    """serve restarted on the new model refuses to search the old collection; once
    `reindex --recreate` (another process) rebuilt it for that model, it searches."""
    store = _shared_server()
    old, new = HashEmbedder(), NewModel()
    install(monkeypatch, old)
    store().upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), old.vector("a"), {})])
    install(monkeypatch, new)
    web = store()
    with pytest.raises(EmbedderMismatch):
        web.search(KNOWLEDGE, new.vector("a"), limit=1)

    rebuild = store()
    rebuild.drop_collection(KNOWLEDGE)
    rebuild.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), new.vector("a"), {})])

    assert [h.id for h in web.search(KNOWLEDGE, new.vector("a"), limit=1)] == [point_id("fact", 1)]


def test_a_server_search_left_on_the_old_model_is_refused_once_the_record_is_read_again(
    monkeypatch,
):
    from memory.stores import vectors_server

    store = _shared_server()
    old, new = HashEmbedder(), NewModel()
    install(monkeypatch, old)
    worker = store()
    worker.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), old.vector("a"), {})])
    assert worker.search(KNOWLEDGE, old.vector("a"), limit=1)  # its record is read

    install(monkeypatch, new)  # serve, restarted on the new model, rebuilds
    serve = store()
    serve.drop_collection(KNOWLEDGE)
    serve.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 2), new.vector("b"), {})])
    install(monkeypatch, old)  # back in the process still on the old settings
    later = vectors_server._clock() + vectors_server.RECORD_REFRESH_S + 1
    monkeypatch.setattr(vectors_server, "_clock", lambda: later)

    with pytest.raises(EmbedderMismatch):
        worker.search(KNOWLEDGE, old.vector("a"), limit=1)


def test_an_indexing_task_reads_a_server_collection_once_before_it_embeds(monkeypatch):
    """The checks before the (paid) embedding, dimension and model, come from one read
    of the collection: two requests to the server, not four (a task of every batch)."""
    from memory.services.index_documents import Document

    store = _shared_server()()
    install(monkeypatch, HashEmbedder())
    store.upsert(KNOWLEDGE, [VectorPoint(point_id("fact", 1), HashEmbedder().vector("a"), {})])
    monkeypatch.setattr("memory.stores.vectors._store", store)
    requests: list[str] = []
    for name in ("collection_exists", "get_collection"):
        real = getattr(store.client, name)

        def spy(*args, _name=name, _real=real, **kwargs):
            requests.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(store.client, name, spy)
    document = Document(
        kind="fact",
        row_id=2,
        version=1,
        collection=KNOWLEDGE,
        point_id=point_id("fact", 2),
        text="un fait",
        payload={},
    )

    assert len(indexing._embed([document])) == 1
    assert requests == ["collection_exists", "get_collection"]
