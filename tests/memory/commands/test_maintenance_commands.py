"""reindex, memory_doctor, purge_expired and memory_stats on a real SQLite and embedded Qdrant."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from memory.models import Fact, IndexState, RevisionReason, Summary
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, KIND_MESSAGE
from memory.services.messages import message_save
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, VectorPoint, point_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def filled(vector_store, local_embedder):
    for i in range(7):
        question = message_save(
            channel="whatsapp", role="user", content=f"Question {i} sur le potager"
        )
        message_save(
            channel="whatsapp", role="assistant", content=f"Réponse {i}", reply_to_id=question.id
        )
    for i in range(4):
        fact_store(key=f"fact_{i}", value=f"Le fait numéro {i} concerne le vélo")
    Summary.objects.create(channel="whatsapp", content="Résumé des échanges sur le jardin")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())
    return vector_store


def _run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _run_finding_differences(*args) -> str:
    """A command that reports differences and exits with status 1 (memory_doctor)."""
    out = StringIO()
    with pytest.raises(CommandError):
        call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_reindex_builds_every_point_once_and_prints_a_count(filled):
    assert filled.count(CONVERSATIONS) == 7
    assert filled.count(KNOWLEDGE) == 5
    out = _run("reindex")
    assert "12 points écrits" in out
    assert filled.count(CONVERSATIONS) == 7  # a second run duplicates nothing


def test_reindex_recreate_rebuilds_a_wiped_store_exactly(filled):
    before = {name: sorted(filled.iter_ids(name)) for name in (CONVERSATIONS, KNOWLEDGE)}
    filled.drop_collection(CONVERSATIONS)
    filled.drop_collection(KNOWLEDGE)
    _run("reindex", "--recreate", "--batch-size", "3")
    after = {name: sorted(filled.iter_ids(name)) for name in (CONVERSATIONS, KNOWLEDGE)}
    assert after == before


def test_reindex_one_collection_leaves_the_other(filled):
    filled.drop_collection(KNOWLEDGE)
    _run("reindex", "--collection", "conversations")
    assert filled.collection_dimension(KNOWLEDGE) is None


def test_doctor_finds_and_fixes_an_orphan_and_a_missing_point(filled):
    fact = Fact.objects.get(key="fact_0")
    filled.delete(KNOWLEDGE, [point_id(KIND_FACT, fact.id)])
    orphan = point_id(KIND_MESSAGE, 999_999)
    vector = [1.0] + [0.0] * (filled.collection_dimension(CONVERSATIONS) - 1)
    filled.upsert(
        CONVERSATIONS, [VectorPoint(id=orphan, vector=vector, payload={"row_id": 999_999})]
    )

    out = _run_finding_differences("memory_doctor")
    assert "knowledge: 1 sans point" in out
    assert "conversations: 0 sans point, 1 points orphelins" in out
    assert "relancez avec --fix" in out

    _run("memory_doctor", "--fix")
    assert orphan not in set(filled.iter_ids(CONVERSATIONS))
    assert point_id(KIND_FACT, fact.id) in set(filled.iter_ids(KNOWLEDGE))
    assert "Tout est cohérent." in _run("memory_doctor")


def test_doctor_finds_a_stale_point(filled):
    fact = Fact.objects.get(key="fact_1")
    Fact.objects.filter(pk=fact.pk).update(value="valeur changée sans réindexation")
    out = _run_finding_differences("memory_doctor", "--collection", "knowledge")
    assert "1 périmés" in out
    _run("memory_doctor", "--fix")
    [hit] = filled.retrieve(KNOWLEDGE, [point_id(KIND_FACT, fact.id)])
    assert hit.payload["content"] == "valeur changée sans réindexation"


def test_purge_expired_removes_the_fact_from_both_tiers(
    filled, eager_tasks, django_capture_on_commit_callbacks
):
    fact = Fact.objects.get(key="fact_2")
    Fact.objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    with django_capture_on_commit_callbacks(execute=True):
        out = _run("purge_expired")
    assert "1 fait(s) expiré(s) purgé(s)." in out
    fact.refresh_from_db()
    assert fact.forgotten
    assert fact.revisions.first().reason == RevisionReason.EXPIRED
    assert filled.retrieve(KNOWLEDGE, [point_id(KIND_FACT, fact.id)]) == []


def test_memory_stats_prints_tiers_states_and_collections_in_french(filled):
    out = _run("memory_stats")
    assert "faits : " in out and "messages : " in out and "résumés : " in out
    assert "qdrant : disponible" in out and "conversations 7" in out
    assert re.search(r"indexation : en attente \d+, indexé [1-9]", out)  # French states
    assert re.search(r"dernière indexation : \d\d/\d\d/\d{4} \d\d:\d\d\n", out)
    assert "tâches de fond : " in out and "dernière indexation : " in out
    # No English word of the old output: keys and states are all translated.
    for english in (
        "facts",
        "summaries",
        "active",
        "forgotten",
        "pending",
        "indexed",
        "retrievals",
    ):
        assert english not in out, english


def test_a_locked_or_unreachable_store_is_a_clear_command_error(settings, local_embedder):
    from django.core.management.base import CommandError

    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    fact_store(key="k", value="valeur à indexer")
    try:
        with pytest.raises(CommandError, match="Qdrant"):
            _run("reindex")
    finally:
        vector_store_reset()
    assert Fact.objects.get(key="k").index_state == IndexState.PENDING


def test_serve_warns_when_separate_workers_would_share_the_embedded_folder(settings):
    """Without its in-process worker and without QDRANT_URL, serve says why that cannot work."""
    from unittest import mock

    from memory.management.commands.serve import SHARED_FOLDER_WARNING

    settings.QDRANT_URL = ""
    err = StringIO()
    with mock.patch("waitress.create_server") as create_server:
        create_server.return_value.run.side_effect = KeyboardInterrupt  # stop at once
        create_server.return_value.effective_port = 0
        with pytest.raises(KeyboardInterrupt):
            call_command("serve", "--worker", "no", "--no-migrate", stdout=StringIO(), stderr=err)
    assert SHARED_FOLDER_WARNING in err.getvalue()
