"""Indexing T1 rows into Qdrant: idempotent, state-tracked, nothing lost on failure."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.exceptions import StoreUnavailable
from memory.models import Fact, IndexState, Message, Summary
from memory.services import index_queue
from memory.services.facts import fact_forget, fact_store
from memory.services.indexing import (
    KIND_FACT,
    KIND_MESSAGE,
    KIND_SUMMARY,
    index_row,
    index_rows,
    pending_sweep,
)
from memory.services.messages import message_save
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, point_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder):
    return vector_store


def _exchange(
    channel="whatsapp", user="Je me suis cassé l'épaule au ski", reply="Aïe, repose-toi bien."
):
    question = message_save(channel=channel, role="user", content=user)
    answer = message_save(channel=channel, role="assistant", content=reply, reply_to_id=question.id)
    return question, answer


def test_an_exchange_becomes_one_point_with_both_messages(world):
    question, answer = _exchange()
    index_row(KIND_MESSAGE, question.id)
    [hit] = world.retrieve(CONVERSATIONS, [point_id(KIND_MESSAGE, question.id)])
    assert hit.payload["user_message"] == question.content
    assert hit.payload["assistant_message"] == answer.content
    assert hit.payload["channel"] == "whatsapp"
    assert hit.payload["role"] == "exchange"
    question.refresh_from_db()
    answer.refresh_from_db()
    assert question.index_state == answer.index_state == IndexState.INDEXED
    assert question.indexed_at is not None


def test_indexing_the_same_row_twice_never_makes_a_second_point(world):
    question, _ = _exchange()
    index_row(KIND_MESSAGE, question.id)
    index_row(KIND_MESSAGE, question.id)
    assert world.count(CONVERSATIONS) == 1


def test_a_task_for_rows_already_current_writes_nothing(world):
    """A burst of messages sends one task each; the first batch indexes them all, and the
    others find their rows current: no lease taken and released (two commits each)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    question, _ = _exchange()
    fact = fact_store(key="velo", value="Le vélo est au garage")[0]
    index_row(KIND_MESSAGE, question.id)
    index_row(KIND_FACT, fact.id)
    with CaptureQueriesContext(connection) as queries:
        messages = index_rows(KIND_MESSAGE, [question.id])
        facts = index_rows(KIND_FACT, [fact.id])
    writes = [
        q["sql"] for q in queries.captured_queries if q["sql"].startswith(("UPDATE", "INSERT"))
    ]
    assert writes == []
    # Reads only: the exchange's links and the row states (one query each, compiled).
    assert len(queries.captured_queries) == 3
    assert messages.current == facts.current == 1
    assert messages.indexed == facts.indexed == 0


def test_a_new_message_is_saved_pending_and_queued_in_its_insert_alone(
    world, django_capture_on_commit_callbacks, monkeypatch
):
    """A new user message is pending at a version its point never had by its defaults: it
    is saved queued, in its INSERT, and its task goes on commit; no lookup of its exchange
    and no UPDATE (one request of a channel's burst, posted over HTTP)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with django_capture_on_commit_callbacks() as callbacks:
        with CaptureQueriesContext(connection) as queries:
            question = message_save(channel="whatsapp", role="user", content="On part à Lyon ?")
    message_sql = [
        q["sql"] for q in queries.captured_queries if '"messages"' in q["sql"].split(" WHERE")[0]
    ]
    assert [sql.split()[0] for sql in message_sql] == ["INSERT"]
    assert len(callbacks) == 1
    sent: list[tuple[str, list[int]]] = []
    monkeypatch.setattr(index_queue, "_send", lambda kind, ids: sent.append((kind, list(ids))))
    callbacks[0]()
    assert sent == [(KIND_MESSAGE, [question.id])]  # its own task, on commit
    question.refresh_from_db()
    assert question.index_state == IndexState.PENDING
    assert question.version > question.indexed_version
    assert question.index_queued_at is not None
    index_row(KIND_MESSAGE, question.id)
    question.refresh_from_db()
    assert question.index_state == IndexState.INDEXED
    assert world.count(CONVERSATIONS) == 1


def test_indexing_a_reply_updates_the_exchange_of_its_question(world):
    question = message_save(channel="whatsapp", role="user", content="On se voit demain ?")
    index_row(KIND_MESSAGE, question.id)
    answer = message_save(
        channel="whatsapp", role="assistant", content="Oui, à 10 h.", reply_to_id=question.id
    )
    index_row(KIND_MESSAGE, answer.id)
    assert world.count(CONVERSATIONS) == 1
    [hit] = world.retrieve(CONVERSATIONS, [point_id(KIND_MESSAGE, question.id)])
    assert hit.payload["assistant_message"] == "Oui, à 10 h."


def test_system_messages_are_skipped_not_left_pending(world):
    notice = message_save(
        channel="whatsapp", role="system", content="Rappel automatique", source="system"
    )
    assert notice.index_state == IndexState.SKIPPED
    assert world.count(CONVERSATIONS) == 0


def test_a_fact_point_carries_its_payload_and_leaves_when_forgotten(world):
    fact, _ = fact_store(
        key="david_city",
        value="David habite à Toulouse",
        memory_type="fact",
        subjects=["David"],
        channel="whatsapp",
    )
    index_row(KIND_FACT, fact.id)
    pid = point_id(KIND_FACT, fact.id)
    [hit] = world.retrieve(KNOWLEDGE, [pid])
    expected = {
        "type": "fact",
        "key": "david_city",
        "content": "David habite à Toulouse",
        "subjects": ["david"],
        "memory_type": "fact",
        "row_id": fact.id,
    }
    assert hit.payload.items() >= expected.items()
    fact_forget(fact=fact, actor="user")
    index_row(KIND_FACT, fact.id)
    assert world.retrieve(KNOWLEDGE, [pid]) == []
    fact.refresh_from_db()
    assert fact.index_state == IndexState.INDEXED


def test_a_summary_is_indexed_in_knowledge(world):
    summary = Summary.objects.create(
        channel="mission_control", content="On a parlé du budget 2026.", message_count=12
    )
    index_row(KIND_SUMMARY, summary.id)
    [hit] = world.retrieve(KNOWLEDGE, [point_id(KIND_SUMMARY, summary.id)])
    assert hit.payload["type"] == "summary"
    assert hit.payload["channel"] == "mission_control"


def test_a_row_that_is_gone_is_skipped_quietly(world):
    report = index_row(KIND_FACT, 987654)
    assert report.gone == 1 and report.indexed == 0


def test_a_batch_embeds_many_rows_at_once(world):
    questions = [_exchange(user=f"Question numéro {i} sur le jardin")[0] for i in range(5)]
    report = index_rows(KIND_MESSAGE, [q.id for q in questions])
    assert report.indexed == 5
    assert world.count(CONVERSATIONS) == 5


def test_saving_enqueues_indexing_on_commit(world, eager_tasks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        question, _ = _exchange()
        fact_store(key="pet", value="Un chat nommé Pixel")
    assert len(callbacks) == 3
    assert world.count(CONVERSATIONS) == 1
    assert world.count(KNOWLEDGE) == 1
    assert Message.objects.filter(index_state=IndexState.INDEXED).count() == 2


def test_nothing_is_enqueued_when_the_transaction_rolls_back(
    world, django_capture_on_commit_callbacks
):
    from django.db import transaction

    with django_capture_on_commit_callbacks() as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            _exchange()
            raise RuntimeError("boom")
    assert callbacks == []
    assert Message.objects.count() == 0


def test_a_store_outage_keeps_the_row_pending_with_a_backoff(settings, local_embedder, tmp_path):
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"  # nothing listens there
    settings.QDRANT_TIMEOUT_S = 1
    try:
        question, _ = _exchange()
        with pytest.raises(StoreUnavailable):
            index_row(KIND_MESSAGE, question.id)
    finally:
        vector_store_reset()
    question.refresh_from_db()
    assert question.index_state == IndexState.PENDING
    assert question.index_attempts == 1
    assert question.index_error
    assert question.index_retry_at > timezone.now()


def test_the_sweep_enqueues_pending_rows_left_behind_and_indexes_them(world, eager_tasks):
    """A task sent longer ago than the queue grace (a lost broker message) is sent again."""
    old = timezone.now() - timedelta(minutes=5)
    question, _ = _exchange()
    fact, _ = fact_store(key="sport", value="Ski de randonnée")
    Message.objects.update(index_queued_at=old)
    Fact.objects.update(index_queued_at=old)
    fresh = message_save(channel="whatsapp", role="user", content="message tout frais")
    counts = pending_sweep()
    assert counts[KIND_MESSAGE] == 1 and counts[KIND_FACT] == 1
    question.refresh_from_db()
    fresh.refresh_from_db()
    assert question.index_state == IndexState.INDEXED
    # The sweep did not send the fresh row (its own task is on its way), but the
    # task it sent took it into its batch: rows waiting together are embedded together.
    assert fresh.index_state == IndexState.INDEXED
    assert world.count(KNOWLEDGE) == 1


def test_the_sweep_retries_a_failed_attempt_only_after_its_backoff(world, eager_tasks):
    fact, _ = fact_store(key="k", value="valeur")
    Fact.objects.filter(pk=fact.pk).update(
        index_state=IndexState.PENDING,
        index_attempts=1,
        index_queued_at=None,
        index_retry_at=timezone.now() + timedelta(minutes=5),
    )
    assert pending_sweep()[KIND_FACT] == 0
    Fact.objects.filter(pk=fact.pk).update(index_retry_at=timezone.now() - timedelta(seconds=1))
    assert pending_sweep()[KIND_FACT] == 1
    fact.refresh_from_db()
    assert fact.index_state == IndexState.INDEXED


def test_the_sweep_leaves_rows_that_ended_failed_to_the_owner(world, eager_tasks):
    """A failed row is final until reindex or memory_doctor --fix: no paid call every minute."""
    fact, _ = fact_store(key="k", value="valeur")
    Fact.objects.filter(pk=fact.pk).update(
        index_state=IndexState.FAILED, index_attempts=5, index_queued_at=None
    )
    assert pending_sweep(now=timezone.now() + timedelta(days=1))[KIND_FACT] == 0
