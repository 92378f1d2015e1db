"""QA: an erasure that commits while an indexing task is between its fence and its
upsert leaves the erased row's point (its text in the payload) in Qdrant for good.

The fence (memory.services.indexing._fence) renews the task's lease and keeps the row;
the erasure (fact_erase: forget + purge at once) deletes the row, and its points_remove
job runs at its commit: it deletes the point (none yet) and rewrites the collection.
The task then upserts the point of the row as it read it, and its finish finds no row:
nothing bumps it (the row is gone) and no job removes it afterwards. README: "the
points' removal, there and in an erasure, is a job written with the deletion ...
never in Qdrant", "an erasure leaves none of it on disk". Only a manual
`memory_doctor --fix` ever finds the orphan.

The interleaving is injected at `_remove`, the first thing `_write` does after the
fence: the erasure stands for another thread (a web request) committing right then.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services import indexing
from memory.services.erasing import fact_erase
from memory.services.facts import fact_store
from memory.stores.vectors import KNOWLEDGE, point_id
from tests.fakes.embedder import HashEmbedder, install

SECRET = "Le code du garage est B4242Z"


@pytest.mark.django_db(transaction=True)
def test_an_erasure_committed_after_a_tasks_fence_leaves_no_point(vector_store, monkeypatch):
    install(monkeypatch, HashEmbedder())
    keep, _ = fact_store(key="velo", value="Le vélo est gris")
    secret, _ = fact_store(key="code_garage", value=SECRET)
    real_remove = indexing._remove

    def erased_meanwhile(removals):
        monkeypatch.setattr(indexing, "_remove", real_remove)
        fact_erase(fact=Fact.objects.get(pk=secret.id), actor=Actor.USER)
        real_remove(removals)

    monkeypatch.setattr(indexing, "_remove", erased_meanwhile)
    indexing.index_rows(indexing.KIND_FACT, [keep.id, secret.id])

    assert not Fact.all_objects.filter(pk=secret.id).exists()  # erased
    ids = set(vector_store.iter_ids(KNOWLEDGE))
    assert point_id("fact", keep.id) in ids
    leftover = [h.payload for h in vector_store.retrieve(KNOWLEDGE, [point_id("fact", secret.id)])]
    assert point_id("fact", secret.id) not in ids, f"erased fact's point still there: {leftover}"


@pytest.mark.django_db(transaction=True)
def test_a_row_erased_before_the_fence_costs_no_second_collection_rewrite(
    vector_store, monkeypatch
):
    install(monkeypatch, HashEmbedder())
    keep, _ = fact_store(key="velo", value="Le vélo est gris")
    secret, _ = fact_store(key="code_garage", value="Le code du garage est B4242Z")
    indexing.index_rows(indexing.KIND_FACT, [keep.id])  # the collection exists

    rewrites: list[str] = []
    real_rewrite = type(vector_store).rewrite

    def counted(self, name):
        rewrites.append(name)
        return real_rewrite(self, name)

    monkeypatch.setattr(type(vector_store), "rewrite", counted)

    real_fence = indexing._fence

    def erased_before_fence(claim, vectors):
        monkeypatch.setattr(indexing, "_fence", real_fence)
        fact_erase(fact=Fact.objects.get(pk=secret.id), actor=Actor.USER)
        return real_fence(claim, vectors)

    monkeypatch.setattr(indexing, "_fence", erased_before_fence)
    indexing.index_rows(indexing.KIND_FACT, [keep.id, secret.id], force=True)

    assert not Fact.all_objects.filter(pk=secret.id).exists()
    # The erasure's own job rewrites knowledge once; the task wrote nothing for the
    # erased row, so it has nothing to rewrite.
    assert rewrites.count(KNOWLEDGE) == 1, rewrites
