"""The index never lies: races between workers, bounded retries, and a sweep that waits.

Tasks are captured instead of sent (``Broker``), so a test decides when each
runs: late, twice, in the middle of another (the fake embedder's hook runs
while a task embeds, the slow part of a real worker), or never (a lost broker
message). Every test ends at a quiescent point: the queue drained and the sweep
run with the clock past every grace period and backoff.
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

import memory.services.indexing as indexing
from memory.models import Fact, IndexState, Message
from memory.selectors import memory_stats_get
from memory.services.expiry import expired_purge
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.index_failures import MAX_ATTEMPTS
from memory.services.indexing import (
    KIND_FACT,
    KIND_MESSAGE,
    fact_text,
    index_row,
    pending_sweep,
)
from memory.services.maintenance import memory_doctor, reindex
from memory.services.messages import message_save
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, VectorPoint, point_id
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db(transaction=True)

# Longer than any lease, queue grace or backoff of the indexing machine.
LATER = timedelta(hours=7)
# Longer than a task's lease, shorter than the sweep's queue grace.
LEASE_RUNS_OUT = timedelta(seconds=90)


class Broker:
    """The tasks the code sends, in order; a test runs, repeats or drops them."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []

    def send(self, kind: str, row_ids) -> None:
        self.sent.extend((kind, row_id) for row_id in row_ids)

    def run(self, kind: str, row_id: int):
        """Deliver one queued task for this row (it must have been sent)."""
        self.sent.remove((kind, row_id))
        return index_row(kind, row_id)

    def drain(self) -> None:
        while self.sent:
            index_row(*self.sent.pop(0))


@pytest.fixture
def world(vector_store, monkeypatch, time_machine):
    """A real embedded Qdrant, the fake embedder, captured tasks, a frozen clock."""
    from memory.services import index_queue

    time_machine.move_to(timezone.now(), tick=False)
    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    broker = Broker()
    monkeypatch.setattr(index_queue, "_send", broker.send)
    return vector_store, embedder, broker


def settle(broker: Broker, time_machine) -> None:
    """Quiescence: drain the queue, let time pass, sweep; until the sweep sends nothing."""
    for _ in range(MAX_ATTEMPTS + 5):
        broker.drain()
        time_machine.shift(LATER)
        pending_sweep()
        if not broker.sent:
            return
    raise AssertionError("the indexing never settles")


def fact_row(fact_id: int) -> Fact:
    return Fact._base_manager.get(pk=fact_id)


def the_point(store, collection: str, kind: str, row_id: int, *, with_vectors=False):
    hits = store.retrieve(collection, [point_id(kind, row_id)], with_vectors=with_vectors)
    return hits[0] if hits else None


def assert_vector_of(embedder: HashEmbedder, point, text: str) -> None:
    assert point.vector == pytest.approx(embedder.vector(text), abs=1e-5)


# --- a slow worker never leaves a stale point behind "indexed" --------------------------


@pytest.mark.parametrize("lease_runs_out", [False, True], ids=["lease-held", "lease-ran-out"])
def test_a_slow_worker_never_leaves_its_stale_vector_behind_a_row_marked_indexed(
    world, time_machine, lease_runs_out
):
    """A embeds v1; the owner edits the fact; B indexes v2; then A writes its v1 point."""
    store, embedder, broker = world
    fact, _ = fact_store(key="ville", value="Mickael habite à Lyon depuis 2019")

    def meanwhile(texts):
        assert texts == ["Mickael habite à Lyon depuis 2019"]
        fact_update(fact=fact_row(fact.pk), actor="user", value="Mickael habite à Nantes")
        if lease_runs_out:
            time_machine.shift(LEASE_RUNS_OUT)
        broker.run(KIND_FACT, fact.pk)  # B: the task the edit sent

    embedder.hook = meanwhile
    broker.run(KIND_FACT, fact.pk)  # A
    settle(broker, time_machine)

    fact = fact_row(fact.pk)
    point = the_point(store, KNOWLEDGE, KIND_FACT, fact.pk, with_vectors=True)
    assert fact.index_state == IndexState.INDEXED
    assert point.payload["content"] == fact.value == "Mickael habite à Nantes"
    assert_vector_of(embedder, point, fact_text(fact))


class _Killed(BaseException):
    """The worker dies (SIGKILL, or its finish refused) between its write and its finish."""


def test_a_worker_whose_lease_ran_out_writes_nothing_even_if_it_dies_before_its_finish(
    world, time_machine, monkeypatch
):
    """A embeds v1 past its lease; the owner edits the fact and B indexes v2 and finishes;
    A then dies before its finish, its message delivered again: no v1 point is left
    behind a row marked indexed (nothing would ever overwrite it)."""
    store, embedder, broker = world
    fact, _ = fact_store(key="ville", value="Mickael habite à Lyon depuis 2019")

    def meanwhile(texts):
        if texts == ["Mickael habite à Lyon depuis 2019"]:
            fact_update(fact=fact_row(fact.pk), actor="user", value="Mickael habite à Nantes")
            time_machine.shift(LEASE_RUNS_OUT)
            broker.run(KIND_FACT, fact.pk)  # B, inside A's embedding

    embedder.hook = meanwhile
    finish = indexing._finish_all
    finishes = []

    def a_dies_at_its_finish(claim):
        finishes.append(claim.token)
        if len(finishes) == 1:
            return finish(claim)  # B's
        raise _Killed()

    monkeypatch.setattr(indexing, "_finish_all", a_dies_at_its_finish)
    with pytest.raises(_Killed):
        broker.run(KIND_FACT, fact.pk)  # A
    monkeypatch.setattr(indexing, "_finish_all", finish)
    indexing.index_row(KIND_FACT, fact.pk)  # A's message, delivered again
    settle(broker, time_machine)

    fact = fact_row(fact.pk)
    point = the_point(store, KNOWLEDGE, KIND_FACT, fact.pk, with_vectors=True)
    assert fact.index_state == IndexState.INDEXED
    assert point.payload["content"] == fact.value == "Mickael habite à Nantes"
    assert_vector_of(embedder, point, fact_text(fact))


@pytest.mark.parametrize("lease_runs_out", [False, True], ids=["lease-held", "lease-ran-out"])
def test_a_slow_worker_never_writes_an_exchange_without_the_reply_that_came_meanwhile(
    world, time_machine, lease_runs_out
):
    store, embedder, broker = world
    question = message_save(channel="whatsapp", role="user", content="Tu connais un bon kiné ?")
    answer = None

    def meanwhile(texts):
        nonlocal answer
        answer = message_save(
            channel="whatsapp",
            role="assistant",
            content="Oui : le cabinet Martin, rue Nationale.",
            reply_to_id=question.id,
        )
        if lease_runs_out:
            time_machine.shift(LEASE_RUNS_OUT)
        broker.run(KIND_MESSAGE, question.id)

    embedder.hook = meanwhile
    broker.run(KIND_MESSAGE, question.id)
    settle(broker, time_machine)

    point = the_point(store, CONVERSATIONS, KIND_MESSAGE, question.id)
    assert point.payload["assistant_message"] == answer.content
    for message in (question, answer):
        message.refresh_from_db()
        assert message.index_state == IndexState.INDEXED


@pytest.mark.parametrize("lease_runs_out", [False, True], ids=["lease-held", "lease-ran-out"])
def test_a_late_removal_never_deletes_the_point_of_a_fact_restored_meanwhile(
    world, time_machine, monkeypatch, lease_runs_out
):
    """A (the forget's task) removes the point; before it does, the fact is restored and B
    (the restore's task) writes it again."""
    store, embedder, broker = world
    fact, _ = fact_store(key="chat", value="Le chat s'appelle Pixel")
    settle(broker, time_machine)
    fact_forget(fact=fact_row(fact.pk), actor="user")
    delete = store.delete
    hooked = []

    def late_delete(collection, ids):
        if not hooked:
            hooked.append(ids)
            fact_restore(fact=fact_row(fact.pk), actor="user")
            if lease_runs_out:
                time_machine.shift(LEASE_RUNS_OUT)
            broker.run(KIND_FACT, fact.pk)  # B
        delete(collection, ids)

    monkeypatch.setattr(store, "delete", late_delete)
    broker.run(KIND_FACT, fact.pk)  # A
    assert hooked, "the forget's task removed nothing"
    settle(broker, time_machine)

    fact = fact_row(fact.pk)
    assert not fact.forgotten
    assert fact.index_state == IndexState.INDEXED
    point = the_point(store, KNOWLEDGE, KIND_FACT, fact.pk)
    assert point is not None and point.payload["content"] == "Le chat s'appelle Pixel"


# --- every failure is counted, backs off and ends ----------------------------------------


def test_an_unexpected_error_counts_attempts_backs_off_and_ends_failed_with_its_error(
    world, time_machine, staff_client
):
    store, embedder, broker = world
    embedder.error = RuntimeError("le fournisseur a changé son format")
    fact, _ = fact_store(key="sport", value="Ski de randonnée le dimanche")
    broker.drain()
    for attempt in range(1, MAX_ATTEMPTS):
        row = fact_row(fact.pk)
        assert (row.index_state, row.index_attempts) == (IndexState.PENDING, attempt)
        assert row.index_retry_at > timezone.now()
        assert pending_sweep() == {"message": 0, "fact": 0, "summary": 0}  # backing off
        time_machine.move_to(row.index_retry_at + timedelta(seconds=1), tick=False)
        pending_sweep()
        assert broker.sent == [(KIND_FACT, fact.pk)]
        broker.drain()

    row = fact_row(fact.pk)
    assert (row.index_state, row.index_attempts) == (IndexState.FAILED, MAX_ATTEMPTS)
    assert "le fournisseur a changé son format" in row.index_error
    settle(broker, time_machine)
    assert len(embedder.document_calls) == MAX_ATTEMPTS  # and never again
    failures = memory_stats_get(include_vectors=False)["index_failures"]
    assert {"kind": "fact", "id": fact.pk} in [{"kind": f["kind"], "id": f["id"]} for f in failures]
    assert "le fournisseur a changé son format" in failures[0]["error"]
    out = StringIO()
    with pytest.raises(CommandError):  # a failed row is a difference: exit status 1
        call_command("memory_doctor", stdout=out)
    assert "le fournisseur a changé son format" in out.getvalue()
    page = staff_client.get(reverse("admin:memory_fact_change", args=[fact.pk]))
    assert "le fournisseur a changé son format" in page.content.decode()


def test_rows_written_after_an_embedder_change_fail_at_once_without_a_paid_call(
    world, time_machine, monkeypatch
):
    store, embedder, broker = world
    fact_store(key="ville", value="Mickael habite à Lyon")
    settle(broker, time_machine)
    assert store.collection_dimension(KNOWLEDGE) == 64
    other = HashEmbedder(dimension=32)  # VOYAGE_API_KEY set: another model, another size
    install(monkeypatch, other)

    fact, _ = fact_store(key="sport", value="Ski de randonnée le dimanche")
    settle(broker, time_machine)

    assert other.document_calls == []
    row = fact_row(fact.pk)
    assert row.index_state == IndexState.FAILED
    assert "reindex" in row.index_error
    reindex(recreate=True)
    assert the_point(store, KNOWLEDGE, KIND_FACT, fact.pk) is not None


def test_the_agents_reply_to_a_system_message_is_skipped_not_left_pending(world, time_machine):
    store, embedder, broker = world
    notice = message_save(
        channel="whatsapp", role="system", content="Rappel : réunion à 10 h", source="system"
    )
    reply = message_save(
        channel="whatsapp", role="assistant", content="C'est noté.", reply_to_id=notice.id
    )
    settle(broker, time_machine)
    reply.refresh_from_db()
    assert reply.index_state == IndexState.SKIPPED
    assert embedder.document_calls == []
    assert not Message._base_manager.filter(index_state=IndexState.PENDING).exists()


# --- the sweep waits for queued and leased work; a current row is never re-embedded ---


def test_the_sweep_does_not_resend_a_row_whose_task_still_waits_in_the_queue(world, time_machine):
    store, embedder, broker = world
    fact, _ = fact_store(key="ville", value="Mickael habite à Lyon")
    broker.sent.clear()  # the broker lost the task
    time_machine.shift(timedelta(minutes=10))
    pending_sweep()
    assert broker.sent == [(KIND_FACT, fact.pk)]  # sent again, waiting behind other work
    time_machine.shift(timedelta(minutes=1))
    pending_sweep()
    assert broker.sent == [(KIND_FACT, fact.pk)]  # not twice
    broker.drain()
    assert len(embedder.document_calls) == 1


def test_the_sweep_does_not_resend_a_row_a_worker_is_indexing(world, time_machine):
    store, embedder, broker = world
    fact, _ = fact_store(key="ville", value="Mickael habite à Lyon")
    time_machine.shift(timedelta(minutes=10))  # the worker picks the task up late

    def meanwhile(texts):
        pending_sweep()

    embedder.hook = meanwhile
    broker.run(KIND_FACT, fact.pk)
    assert broker.sent == []
    assert fact_row(fact.pk).index_state == IndexState.INDEXED


def test_a_task_delivered_twice_embeds_the_row_once(world, time_machine):
    store, embedder, broker = world
    fact, _ = fact_store(key="ville", value="Mickael habite à Lyon")
    question = message_save(channel="whatsapp", role="user", content="On se voit demain ?")
    message_save(channel="whatsapp", role="assistant", content="Oui.", reply_to_id=question.id)
    for kind, row_id in list(broker.sent) * 2:  # every task delivered twice
        index_row(kind, row_id)
    broker.sent.clear()
    settle(broker, time_machine)
    assert sorted(embedder.embedded_texts) == ["Mickael habite à Lyon", "On se voit demain ?\nOui."]


# --- the doctor compares versions --------------------------------------------------------


def test_the_doctor_finds_a_point_of_another_version_and_rewrites_it(world, time_machine):
    """An old worker's late write: same text, but the subjects (and version) of before."""
    store, embedder, broker = world
    fact, _ = fact_store(key="ville", value="Mickael habite à Lyon", subjects=["mickael"])
    settle(broker, time_machine)
    old = the_point(store, KNOWLEDGE, KIND_FACT, fact.pk, with_vectors=True)
    fact_update(fact=fact_row(fact.pk), actor="user", subjects=["mickael", "lyon"])
    settle(broker, time_machine)
    store.upsert(KNOWLEDGE, [VectorPoint(id=old.id, vector=old.vector, payload=old.payload)])

    [report] = memory_doctor(collection="knowledge")
    assert report.stale == [fact.pk]
    memory_doctor(collection="knowledge", fix=True)

    point = the_point(store, KNOWLEDGE, KIND_FACT, fact.pk)
    assert point.payload["subjects"] == ["mickael", "lyon"]
    assert memory_doctor(collection="knowledge")[0].healthy


def test_an_expired_fact_purged_while_its_task_embeds_leaves_no_point(world, time_machine):
    store, embedder, broker = world
    fact, _ = fact_store(key="rdv", value="Rendez-vous chez le kiné", ttl="1h")

    def meanwhile(texts):
        time_machine.shift(timedelta(hours=2))
        assert expired_purge() == 1

    embedder.hook = meanwhile
    broker.run(KIND_FACT, fact.pk)
    settle(broker, time_machine)
    assert fact_row(fact.pk).forgotten
    assert the_point(store, KNOWLEDGE, KIND_FACT, fact.pk) is None
