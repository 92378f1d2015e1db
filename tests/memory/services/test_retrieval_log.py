"""The retrieval log row is written off the pre-hook's critical path, and still read right.

Outside a transaction (serve, the API) auto_retrieve hands its memory_retrievals
row to the log's writer thread and returns; the next message of the channel,
the row's id and the access counts still see it. Inside a transaction the row
is written at once, in it.
"""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from memory.models import Fact, MemoryRetrieval
from memory.services.facts import fact_store
from memory.services.retrieval import auto_retrieve
from memory.services.retrieval import log as retrieval_log
from tests.memory.services.test_retrieval import (  # noqa: F401 (world is a fixture)
    _carried,
    _ids,
    _index_all,
    _seed_other_channel_history,
    world,
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("world")
def test_outside_a_transaction_the_writer_thread_logs_and_the_next_turn_carries_it(monkeypatch):
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    Fact.objects.update(created_at="2026-01-01T00:00:00Z")
    _seed_other_channel_history()
    _index_all()
    writers: list[str] = []
    write = retrieval_log._write

    def spy(fields, accessed):
        writers.append(threading.current_thread().name)
        return write(fields, accessed)

    monkeypatch.setattr(retrieval_log, "_write", spy)

    first = auto_retrieve(message="quand est le dentiste ?", channel="mission_control")
    assert f"fact:{fact.id}" in _ids(first)
    row = MemoryRetrieval.objects.get(pk=first.retrieval_id)  # waits for its own row
    assert row.channel == "mission_control"
    assert [m["id"] for m in row.memories] == _ids(first)
    assert row.total_ms > 0
    assert writers == ["retrieval-log_0"]
    assert Fact.objects.get(pk=fact.pk).access_count == 1

    # The next turn reads the log at once: what the first turn found is carried.
    second = auto_retrieve(message="et le dentiste, c'est quand ?", channel="mission_control")
    assert _carried(second) == [f"fact:{fact.id}"]
    retrieval_log.retrieval_logs_wait()
    assert MemoryRetrieval.objects.count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("world")
def test_inside_a_transaction_the_row_is_written_at_once_and_rolled_back_with_it():
    fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")
    _index_all()
    with pytest.raises(RuntimeError), transaction.atomic():
        result = auto_retrieve(message="quand est le dentiste ?", channel="whatsapp")
        assert result.log_future is None
        assert MemoryRetrieval.objects.filter(pk=result.retrieval_id).exists()
        raise RuntimeError("rollback")
    assert MemoryRetrieval.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.usefixtures("world")
def test_carried_memories_are_read_while_the_embedding_runs_not_after(monkeypatch):
    """The block (after the embedding) re-reads nothing: prefetch hydrated the carried ids."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.services.retrieval import pipeline

    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    Fact.objects.update(created_at="2026-01-01T00:00:00Z")
    _seed_other_channel_history()
    _index_all()
    auto_retrieve(message="quand est le dentiste ?", channel="mission_control")
    queries_in_block: list[int] = []
    block_fill = pipeline.block_fill

    def counting(*args, **kwargs):
        with CaptureQueriesContext(connection) as queries:
            block_fill(*args, **kwargs)
        queries_in_block.append(len(queries))

    monkeypatch.setattr(pipeline, "block_fill", counting)
    second = auto_retrieve(message="et le dentiste, c'est quand ?", channel="mission_control")
    assert _carried(second) == [f"fact:{fact.id}"]
    assert queries_in_block == [0]


def _row(channel: str) -> dict:
    return {
        "channel": channel,
        "message_preview": "bonjour",
        "memories": [],
        "notes": [],
        "tokens_added": 0,
        "timings_ms": {},
        "total_ms": 1.0,
        "failed_sources": {},
    }


@pytest.mark.django_db(transaction=True)
def test_rows_that_queue_while_the_writer_is_busy_are_written_in_one_transaction(monkeypatch):
    """Concurrent callers' rows cost one commit together, not one each; each still gets
    its own id, and a reader of any of their channels waits for them."""
    release = threading.Event()
    batches: list[int] = []
    write_batch = retrieval_log._LogWriter._write_batch
    write = retrieval_log._write

    def slow_first(fields, accessed):
        if fields["channel"] == "premier":
            release.wait(5)
        return write(fields, accessed)

    def counting(batch):
        batches.append(len(batch))
        return write_batch(batch)

    monkeypatch.setattr(retrieval_log, "_write", slow_first)
    monkeypatch.setattr(retrieval_log._LogWriter, "_write_batch", staticmethod(counting))
    writer = retrieval_log._LogWriter()
    first = writer.submit(_row("premier"), []).future
    others = [writer.submit(_row(f"canal-{i}"), []).future for i in range(5)]
    release.set()
    ids = [first.result(5)] + [f.result(5) for f in others]

    assert batches == [1, 5]
    assert None not in ids and len(set(ids)) == 6
    assert MemoryRetrieval.objects.count() == 6


@pytest.mark.django_db(transaction=True)
def test_a_row_that_fails_in_a_batch_fails_alone(monkeypatch):
    """A row the database refuses (a real constraint error, in the batch's transaction)
    is logged and dropped; the rows before and after it in the batch are written."""
    release = threading.Event()
    write = retrieval_log._write

    def slow_first(fields, accessed):
        if fields["channel"] == "premier":
            release.wait(5)
        return write(fields, accessed)

    monkeypatch.setattr(retrieval_log, "_write", slow_first)
    writer = retrieval_log._LogWriter()
    first = writer.submit(_row("premier"), []).future
    broken = {**_row("casse"), "channel": None}  # NOT NULL: refused by SQLite itself
    batch = [writer.submit(fields, []).future for fields in (_row("avant"), broken, _row("apres"))]
    release.set()
    first.result(5)

    assert [f.result(5) is None for f in batch] == [False, True, False]
    assert sorted(MemoryRetrieval.objects.values_list("channel", flat=True)) == [
        "apres",
        "avant",
        "premier",
    ]


@pytest.mark.django_db(transaction=True)
def test_the_writer_keeps_its_connection_across_batches_and_follows_a_new_database():
    """One connection for rows that keep coming (opening one per batch cost CPU on every
    message); when the database changes (a throw-away memory), the rows go to the new one."""
    from django.db.backends.signals import connection_created

    from memory.services.throwaway import throwaway_memory

    opened: list[str] = []

    def on_open(sender, connection, **kwargs):
        if threading.current_thread().name.startswith("retrieval-log"):
            opened.append(str(connection.settings_dict["NAME"]))

    connection_created.connect(on_open)
    try:
        writer = retrieval_log._LogWriter()
        ids = [writer.submit(_row(f"canal-{i}"), []).future.result(5) for i in range(3)]
        assert None not in ids and MemoryRetrieval.objects.count() == 3
        assert len(opened) == 1  # three batches, one connection

        with throwaway_memory():
            row_id = writer.submit(_row("jetable"), []).future.result(5)
            assert MemoryRetrieval.objects.filter(pk=row_id, channel="jetable").exists()
        assert len(opened) == 2 and opened[0] != opened[1]

        writer.submit(_row("retour"), []).future.result(5)
        assert set(MemoryRetrieval.objects.values_list("channel", flat=True)) == {
            "canal-0",
            "canal-1",
            "canal-2",
            "retour",
        }
        assert len(opened) == 3
    finally:
        connection_created.disconnect(on_open)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("world")
def test_the_next_turn_carries_what_the_last_found_without_waiting_for_its_commit(monkeypatch):
    """The carried memories of a turn whose row is still in the writer (its commit, an fsync,
    not done yet) are read from the writer's queue: the next message neither waits for the
    disk nor loses them."""
    fact = fact_store(key="dentist", value="Rendez-vous chez le dentiste mardi à 9 heures")[0]
    Fact.objects.update(created_at="2026-01-01T00:00:00Z")
    _seed_other_channel_history()
    _index_all()
    release = _writes_held(monkeypatch)
    try:
        first = auto_retrieve(message="quand est le dentiste ?", channel="mission_control")
        assert f"fact:{fact.id}" in _ids(first)
        second = auto_retrieve(message="et le dentiste, c'est quand ?", channel="mission_control")
        # Neither row is written yet: the second turn read the first from the queue.
        assert not first.log_future.done() and MemoryRetrieval.objects.count() == 0
        assert _carried(second) == [f"fact:{fact.id}"]
    finally:
        release.set()
    retrieval_log.retrieval_logs_wait()
    assert MemoryRetrieval.objects.count() == 2
    # Written now, read from the table: the same turns (the second carried, not new).
    third = auto_retrieve(message="le dentiste, rappelle-moi", channel="mission_control")
    assert _carried(third) == [f"fact:{fact.id}"]


def _writes_held(monkeypatch) -> threading.Event:
    """The log's writer holds every row until the event is set."""
    release = threading.Event()
    write = retrieval_log._write

    def held(fields, accessed):
        release.wait(20)
        return write(fields, accessed)

    monkeypatch.setattr(retrieval_log, "_write", held)
    return release


def _logged(channel: str, memory_id: str):
    from memory.services.retrieval.result import RetrievalResult

    result = RetrievalResult(channel=channel, message=memory_id)
    result.memories = [
        {"id": memory_id, "kind": "fact", "sources": [], "rrf": 0, "score": 0, "text": "x"}
    ]
    retrieval_log.retrieval_log_start(result)
    return result


@pytest.mark.django_db(transaction=True)
def test_a_row_committed_while_the_turns_are_read_counts_once(monkeypatch):
    """The writer commits between the read of its queue and the read of the table: the
    turn is in both, and counts once (by its row id, newer than every row read before)."""
    _logged("whatsapp", "fact:1").retrieval_id  # noqa: B018 (written: waits for its row)
    release = _writes_held(monkeypatch)
    _logged("whatsapp", "fact:2")
    third = _logged("whatsapp", "fact:3")
    table = retrieval_log._LAST_TURNS

    class CommitsFirst:
        def rows(self, **kwargs):
            release.set()  # both queued rows land now, after the queue was read
            third.log_future.result(5)
            return table.rows(**kwargs)

    monkeypatch.setattr(retrieval_log, "_LAST_TURNS", CommitsFirst())
    turns = retrieval_log.channel_turns("whatsapp", 5)
    assert [memories[0]["id"] for memories in turns] == ["fact:3", "fact:2", "fact:1"]
    assert len(table.rows(channel="whatsapp", shape=(5,))) == 3


@pytest.mark.django_db(transaction=True)
def test_a_row_refused_in_a_committed_batch_never_counts_before_the_rows_after_it(monkeypatch):
    """Two turns go in one batch (queued behind a busy writer); the database refuses the
    first. Between the commit and the announcement, the second is in the table and the
    first was still counted from the queue, as the newest turn: ['fact:2', 'fact:3']
    (the stateful machine caught it: a turn out of order). Known refused, it counts no more."""
    _logged("whatsapp", "fact:1").retrieval_id  # noqa: B018 (written: waits for its row)
    busy, committed, announce = threading.Event(), threading.Event(), threading.Event()
    write, real_announce = retrieval_log._write, retrieval_log._announce

    def refusing(fields, accessed):
        memory_id = fields["memories"][0]["id"]
        if memory_id == "fact:99":
            busy.wait(5)
        if memory_id == "fact:2":
            return None  # as _write answers a row the database refused
        return write(fields, accessed)

    def held(entries, **kwargs):
        if "fact:2" in [entry.memories[0]["id"] for entry in entries]:
            committed.set()
            announce.wait(20)
        real_announce(entries, **kwargs)

    monkeypatch.setattr(retrieval_log, "_write", refusing)
    monkeypatch.setattr(retrieval_log, "_announce", held)
    _logged("mission_control", "fact:99")
    second, third = _logged("whatsapp", "fact:2"), _logged("whatsapp", "fact:3")
    busy.set()
    try:
        assert committed.wait(5)
        assert not second.log_future.done() and not third.log_future.done()
        turns = retrieval_log.channel_turns("whatsapp", 5)
        assert [memories[0]["id"] for memories in turns] == ["fact:3", "fact:1"]
    finally:
        announce.set()
    retrieval_log.retrieval_logs_wait()
    assert second.log_future.result(5) is None and third.log_future.result(5) is not None


@pytest.mark.django_db(transaction=True)
def test_a_row_committed_but_not_yet_announced_counts_once(monkeypatch):
    """The writer commits a batch, then announces each row's id. A read between the two
    found the rows in the table and, their futures not done, counted them again from the
    queue (the stateful machine caught it on CI: ['fact:6', 'fact:4', 'fact:4']). A
    queued row knows its id from its INSERT: found in the table, it counts once."""
    _logged("whatsapp", "fact:1").retrieval_id  # noqa: B018 (written: waits for its row)
    committed, announce = threading.Event(), threading.Event()
    real_announce = retrieval_log._announce

    def held(entries, **kwargs):
        committed.set()
        announce.wait(20)
        real_announce(entries, **kwargs)

    monkeypatch.setattr(retrieval_log, "_announce", held)
    second = _logged("whatsapp", "fact:2")
    try:
        assert committed.wait(5)
        assert not second.log_future.done()
        assert MemoryRetrieval.objects.filter(channel="whatsapp").count() == 2
        turns = retrieval_log.channel_turns("whatsapp", 5)
        assert [memories[0]["id"] for memories in turns] == ["fact:2", "fact:1"]
    finally:
        announce.set()
    retrieval_log.retrieval_logs_wait()
    assert second.log_future.result(5) is not None
