"""`reindex --recreate` (or `memory_doctor --fix` on a dimension change) with the embedder down.

Guards that dropping a collection never loses its points for good: every row of
the dropped collection is marked pending before the rebuild starts, so a rebuild
stopped by an unreachable embedder leaves no row marked indexed without its point,
the sweep brings every point back once the embedder answers, and the command's
French error tells the operator what to do.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from memory.exceptions import EmbeddingError
from memory.models import Fact, IndexState
from memory.services.facts import fact_store
from memory.services.indexing import pending_sweep
from memory.stores.vectors import KNOWLEDGE, point_id
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db

FACTS = 6


def _facts_indexed_with(monkeypatch, embedder: HashEmbedder) -> None:
    install(monkeypatch, embedder)
    for i in range(FACTS):
        fact_store(key=f"fait_{i}", value=f"Le fait numéro {i} parle du vélo bleu")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())


def _recreate_refused() -> CommandError:
    with pytest.raises(CommandError) as refused:
        call_command(
            "reindex",
            "--recreate",
            "--collection",
            "knowledge",
            "--batch-size",
            "2",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    return refused.value


def _indexed_without_point(store) -> list[str]:
    present = set(store.iter_ids(KNOWLEDGE)) if store.collection_dimension(KNOWLEDGE) else set()
    return [
        f.key
        for f in Fact.all_objects.all()
        if f.index_state == IndexState.INDEXED and point_id("fact", f.id) not in present
    ]


def test_an_interrupted_recreate_leaves_every_row_without_point_pending(vector_store, monkeypatch):
    embedder = HashEmbedder()
    _facts_indexed_with(monkeypatch, embedder)
    assert vector_store.count(KNOWLEDGE) == FACTS

    embedder.error = EmbeddingError("Voyage injoignable")
    error = _recreate_refused()

    # A row marked indexed without its point is never re-sent by the sweep: lost, not delayed.
    assert _indexed_without_point(vector_store) == []
    assert Fact.all_objects.filter(index_state=IndexState.PENDING).count() == FACTS
    message = str(error)
    assert "Voyage injoignable" in message
    assert "python manage.py reindex" in message and "en attente" in message


def test_after_an_interrupted_recreate_the_sweep_brings_every_point_back(
    vector_store, monkeypatch, eager_tasks
):
    embedder = HashEmbedder()
    _facts_indexed_with(monkeypatch, embedder)
    embedder.error = EmbeddingError("Voyage injoignable")
    _recreate_refused()

    embedder.error = None  # the embedder is back; the service's sweep runs
    for _ in range(3):
        pending_sweep(now=timezone.now() + timedelta(days=1))

    assert vector_store.count(KNOWLEDGE) == FACTS
    assert Fact.all_objects.exclude(index_state=IndexState.INDEXED).count() == 0


def test_running_reindex_again_after_an_interrupted_recreate_rebuilds_everything(
    vector_store, monkeypatch
):
    embedder = HashEmbedder()
    _facts_indexed_with(monkeypatch, embedder)
    embedder.error = EmbeddingError("Voyage injoignable")
    _recreate_refused()

    embedder.error = None
    call_command("reindex", stdout=StringIO(), stderr=StringIO())

    assert vector_store.count(KNOWLEDGE) == FACTS
    assert Fact.all_objects.exclude(index_state=IndexState.INDEXED).count() == 0


def test_doctor_fix_of_a_dimension_change_with_the_embedder_down_loses_no_point(
    vector_store, monkeypatch, eager_tasks
):
    _facts_indexed_with(monkeypatch, HashEmbedder(dimension=32))
    assert vector_store.collection_dimension(KNOWLEDGE) == 32
    new = HashEmbedder(dimension=64)  # the embedder changed, and is down
    new.error = EmbeddingError("Voyage injoignable")
    install(monkeypatch, new)

    with pytest.raises(CommandError, match=r"python manage\.py reindex"):
        call_command(
            "memory_doctor",
            "--fix",
            "--collection",
            "knowledge",
            stdout=StringIO(),
            stderr=StringIO(),
        )

    assert _indexed_without_point(vector_store) == []
    new.error = None
    for _ in range(3):
        pending_sweep(now=timezone.now() + timedelta(days=1))
    assert vector_store.collection_dimension(KNOWLEDGE) == 64
    assert vector_store.count(KNOWLEDGE) == FACTS
