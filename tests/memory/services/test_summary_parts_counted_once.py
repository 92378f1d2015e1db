"""A long summary is several points of one row: counted once, and never crowding the others out (review)."""

from __future__ import annotations

import pytest

from memory.models import Summary
from memory.services.index_documents import KIND_SUMMARY
from memory.services.indexing import KIND_FACT, index_row, index_rows
from memory.services.summary_parts import summary_part_ids, summary_parts
from memory.stores.vectors import KNOWLEDGE
from tests.memory.services.test_summary_parts import MONTH

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder):
    return vector_store


def test_reindex_report_counts_a_failed_summary_once(world, monkeypatch):
    """`reindex` says « N en échec » from IndexReport.failed: one summary row is one row."""
    import memory.services.indexing as indexing

    summary = Summary.objects.create(channel="whatsapp", content=MONTH)
    assert len(summary_parts(MONTH)) > 2

    def boom(documents):
        raise RuntimeError("embedder broke")

    monkeypatch.setattr(indexing, "_embed", boom)
    report = index_rows(KIND_SUMMARY, [summary.id], force=True)
    assert report.failed == 1, report


def test_doctor_lists_a_summary_missing_its_passages_once(world):
    """memory_doctor's « N sans point » is len(report.missing), a list of row ids."""
    from memory.services.maintenance import memory_doctor

    summary = Summary.objects.create(channel="whatsapp", content=MONTH)
    index_row(KIND_SUMMARY, summary.id)
    world.delete(KNOWLEDGE, summary_part_ids(summary.id))  # its passages lost
    [report] = memory_doctor(collection=KNOWLEDGE)
    assert report.missing == [summary.id], report.missing


def test_doctor_lists_a_stale_summary_once(world):
    from memory.services.maintenance import memory_doctor

    summary = Summary.objects.create(channel="whatsapp", content=MONTH)
    index_row(KIND_SUMMARY, summary.id)
    # Changed behind the machine's back (same number of passages, other words).
    Summary.objects.filter(pk=summary.pk).update(content=MONTH.replace("e", "é"))
    [report] = memory_doctor(collection=KNOWLEDGE)
    assert report.stale == [summary.id], report.stale


# Every sentence about the flat: its passages all stand close to a question about it.
FLAT_MONTH = " ".join(
    f"Semaine {i} : on a encore parlé de l'achat de l'appartement de l'avenue Jeanne-d'Arc, "
    f"du prix de l'appartement, du notaire et du crédit pour l'appartement ({i})."
    for i in range(12)
)


def test_a_long_summary_does_not_push_facts_out_of_the_semantic_source(world):
    """The knowledge search asks for ``limit`` points: a summary's passages take them all,
    and the pre-hook's semantic source names one memory instead of ``limit``."""
    from memory.services.facts import fact_store
    from memory.services.retrieval.semantic import semantic_ids, semantic_search

    assert len(summary_parts(FLAT_MONTH)) >= 8
    summary = Summary.objects.create(channel="whatsapp", content=FLAT_MONTH)
    index_row(KIND_SUMMARY, summary.id)
    fact, _ = fact_store(key="prix_appartement", value="L'appartement a coûté 289 000 euros")
    index_row(KIND_FACT, fact.id)

    found = semantic_search("Combien a coûté l'appartement ?", limit=5, min_score=None)
    ids = [item for item, _ in semantic_ids(found["hits"])]
    assert f"fact:{fact.id}" in ids, (ids, [(h.payload, h.score) for _, h, _ in found["hits"]])


def test_a_long_summary_does_not_push_facts_out_of_the_search(world):
    from memory.services.facts import fact_store
    from memory.services.search import memory_search

    summary = Summary.objects.create(channel="whatsapp", content=FLAT_MONTH)
    index_row(KIND_SUMMARY, summary.id)
    fact, _ = fact_store(key="prix_appartement", value="L'appartement a coûté 289 000 euros")
    index_row(KIND_FACT, fact.id)

    hits = memory_search(query="Combien a coûté l'appartement ?", mode="semantic", limit=3)
    assert ("fact", str(fact.id)) in [(h.kind, h.id) for h in hits], hits
