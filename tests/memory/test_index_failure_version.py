"""QA: a task's failure is recorded on a row that changed while it embedded, so the
newer version, which no task ever tried, ends `failed` and is never indexed.

Task T1 claims a fact at version v; while it embeds, the owner edits the fact (v+1,
pending, a task T2 sent on commit). T2 finds the row leased by T1 and leaves it
("busy"; memory.tasks._index then retries it in LEASE + 1 s, an ETA held in the
broker). T1's embedding is refused for the old text (EmbeddingInvalid, e.g. Voyage's
HTTP 400 for that text): index_failure_record filters on the lease token only, not on
the version T1 read, and marks the row `failed` at once. When serve stops within that
minute (a restart, a SIGKILL: the in-process broker's queue, T2's retry with it, dies),
nothing ever tries v+1 again: restart_recover and the sweep never re-send a failed row,
so the owner's new text never gets a point (and the old point stays) until someone runs
`memory_doctor --fix`. Expected: a failure of version v leaves a row that moved to v+1
pending (its own task or the sweep indexes it), as the finish does for a stale write.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.exceptions import EmbeddingInvalid
from memory.models import Actor, Fact, IndexState
from memory.services import index_queue, indexing
from memory.services.facts import fact_store, fact_update
from memory.stores.vectors import KNOWLEDGE, point_id
from tests.fakes.embedder import HashEmbedder, install


@pytest.mark.django_db(transaction=True)
def test_an_edit_made_while_a_task_fails_on_the_old_text_gets_indexed(vector_store, monkeypatch):
    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    delivered = []

    def deliver_inline(kind, row_ids):  # a worker takes each task at once
        for row_id in row_ids:
            delivered.append(indexing.index_rows(kind, [row_id]))

    monkeypatch.setattr(index_queue, "_send", deliver_inline)
    fact, _ = fact_store(key="recette", value="Un texte que l'embedder refuse " * 3)
    fact_id = fact.id
    embedder.error = None
    indexing.index_rows(indexing.KIND_FACT, [fact_id])
    assert Fact.objects.get(pk=fact_id).index_state == IndexState.INDEXED

    def owner_edits_meanwhile(_texts):
        fact_update(
            fact=Fact.objects.get(pk=fact_id), actor=Actor.USER, value="La recette des crêpes"
        )

    # T1: a change of the fact (any), whose embedding is refused for that text.
    monkeypatch.setattr(index_queue, "_send", lambda kind, ids: delivered.append(("sent", ids)))
    fact_update(fact=Fact.objects.get(pk=fact_id), actor=Actor.USER, value="Texte refusé " * 5)
    embedder.hook = owner_edits_meanwhile
    embedder.error = EmbeddingInvalid("requête refusée (HTTP 400) : texte refusé")
    monkeypatch.setattr(index_queue, "_send", deliver_inline)  # the edit's T2 runs at once
    indexing.index_rows(indexing.KIND_FACT, [fact_id])  # T1
    embedder.error = None
    assert delivered[-1].busy == 1  # T2 found the row leased by T1 and left it
    report = delivered[-1]
    # serve restarts before T2's retry: its in-memory queue is gone; the restart's recovery
    # and the sweeps run.
    index_queue.restart_recover()
    index_queue.pending_sweep(now=timezone.now() + timedelta(hours=7))  # the sweep, later

    row = Fact.objects.get(pk=fact_id)
    assert row.value == "La recette des crêpes"
    assert (row.index_state, row.indexed_version) == (IndexState.INDEXED, row.version), (
        row.index_state,
        row.version,
        row.indexed_version,
        row.index_error,
        report,
    )
    [hit] = vector_store.retrieve(KNOWLEDGE, [point_id("fact", fact_id)])
    assert "crêpes" in hit.payload["content"]
