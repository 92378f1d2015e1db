"""The facts every retrieval reads, kept in memory: never staler than a fresh read.

The stateful test interleaves every kind of write to the facts (a new fact, a
restatement, an owner edit, a forget, a restore, an expiry purge, a hard delete,
the agent's self and goals) with what must NOT invalidate the view (an access,
an indexing pass) and with the clock moving (recent window, expiry), each
example rolled back at its end (a rolled-back token never comes back for other
content). After every step the view served equals a fresh read.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from memory.models import Fact, FactKind, IndexState, MemorySettings
from memory.services import index_queue
from memory.services.retrieval.facts_view import (
    _facts_read,
    facts_generation,
    facts_view,
    facts_views_clear,
)
from tests.stateful import stateful_settings

PROFILE = stateful_settings(examples=30, steps=30)
KEYS = [f"fait_{i}" for i in range(6)]
WORLD: dict = {}


def _seen(view, now):
    window = timedelta(hours=MemorySettings.load().recent_window_hours)
    return (
        [(f.pk, f.key, f.value, f.memory_type, f.channel, f.date) for f in view.core],
        view.recent_at(now, window),
        list(view.important),
        list(view.selves),
        list(view.goals),
    )


class FactsViewMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.savepoint = transaction.savepoint()

    def teardown(self) -> None:
        transaction.savepoint_rollback(self.savepoint)

    def _fact(self, key: str) -> Fact | None:
        return Fact.all_objects.filter(key=key).first()

    @rule(
        key=st.sampled_from(KEYS),
        value=st.sampled_from(["chez Paul", "le code est 1937", "au bureau"]),
        memory_type=st.sampled_from(["identity", "fact", "preference", "event"]),
        importance=st.sampled_from([None, 0.5, 0.9]),
        ttl=st.sampled_from([None, None, "1h", "2d"]),
    )
    def store(self, key, value, memory_type, importance, ttl):
        from memory.services.facts import fact_store

        fact_store(key=key, value=value, memory_type=memory_type, importance=importance, ttl=ttl)

    @rule(key=st.sampled_from(KEYS), value=st.sampled_from(["modifié", "corrigé par Mickael"]))
    def owner_edit(self, key, value):
        from memory.services.facts import fact_update

        fact = self._fact(key)
        if fact is not None:
            fact_update(fact=fact, actor="user", value=value, importance=0.95)

    @rule(key=st.sampled_from(KEYS))
    def forget(self, key):
        from memory.services.facts import fact_forget

        fact = self._fact(key)
        if fact is not None:
            fact_forget(fact=fact, actor="user")

    @rule(key=st.sampled_from(KEYS))
    def restore(self, key):
        from memory.services.facts import fact_restore

        fact = self._fact(key)
        if fact is not None:
            fact_restore(fact=fact, actor="user")

    @rule(key=st.sampled_from(KEYS))
    def hard_delete(self, key):
        fact = self._fact(key)
        if fact is not None:
            fact.revisions.all().delete()
            fact.delete()

    @rule()
    def purge_expired(self):
        from memory.services.expiry import expired_purge

        expired_purge()

    @rule(
        kind=st.sampled_from([FactKind.SELF, FactKind.GOAL]),
        content=st.sampled_from(["Je parle français", "Aider Mickael à finir Makilab"]),
    )
    def agent_item(self, kind, content):
        from memory.services.self_memory import agent_item_store

        category = "capability" if kind == FactKind.SELF else "understanding"
        agent_item_store(kind=kind, category=category, content=content, use_llm=False)

    @rule()
    def accessed(self):
        """What must not invalidate the view: an injection's access count, an indexing pass."""
        from memory.services.fact_access import facts_accessed

        facts_accessed(Fact.all_objects.values_list("id", flat=True))
        Fact.all_objects.update(index_state=IndexState.INDEXED, indexed_at=timezone.now())

    @rule(hours=st.sampled_from([0.5, 2, 25, 72, -3]))
    def time_passes(self, hours):
        WORLD["traveller"].shift(timedelta(hours=hours))

    @invariant()
    def the_view_is_a_fresh_read(self):
        now = timezone.now()
        assert _seen(facts_view(now), now) == _seen(_facts_read(now), now)


@pytest.mark.django_db
def test_the_kept_view_always_equals_a_fresh_read(monkeypatch, time_machine):
    from hypothesis.stateful import run_state_machine_as_test

    time_machine.move_to(timezone.now(), tick=False)
    WORLD["traveller"] = time_machine
    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)
    facts_views_clear()
    try:
        run_state_machine_as_test(FactsViewMachine, settings=PROFILE)
    finally:
        WORLD.clear()
        facts_views_clear()


@pytest.mark.django_db
def test_the_token_changes_with_content_not_with_accesses_or_indexing(monkeypatch):
    from memory.services.fact_access import facts_accessed
    from memory.services.facts import fact_store, fact_update

    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)
    before = facts_generation()
    assert before is not None  # the migration's triggers are there
    fact, _ = fact_store(key="portail", value="le code est 1937")
    created = facts_generation()
    assert created != before
    facts_accessed([fact.pk])
    Fact.all_objects.filter(pk=fact.pk).update(index_state=IndexState.INDEXED)
    assert facts_generation() == created
    fact_update(fact=fact, actor="user", value="le code est 4821")
    assert facts_generation() != created


@pytest.mark.django_db
def test_a_kept_view_is_served_without_reading_the_facts_again(django_assert_max_num_queries):
    Fact.objects.create(key="prenom", value="Mickael", memory_type="identity")
    facts_views_clear()
    facts_view()
    with django_assert_max_num_queries(1):  # the token only
        view = facts_view()
    assert [f.key for f in view.core] == ["prenom"]


@pytest.mark.django_db
def test_the_triggers_are_looked_up_once_per_schema_version():
    """sqlite_master is read when the schema changed, not on every message."""
    facts_views_clear()
    with CaptureQueriesContext(connection) as first:
        facts_generation()
    with CaptureQueriesContext(connection) as second:
        token = facts_generation()
    assert any("sqlite_master" in q["sql"] for q in first.captured_queries)
    assert len(second.captured_queries) == 1
    assert "sqlite_master" not in second.captured_queries[0]["sql"]
    assert token is not None


@pytest.mark.django_db
def test_without_its_triggers_nothing_is_kept_and_the_reads_stay_true(caplog):
    """A migration that remade core_memory would drop the triggers: no stale view then."""
    Fact.objects.create(key="prenom", value="Mickael", memory_type="identity")
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER core_memory_generation_update")
    with caplog.at_level(logging.WARNING):
        assert facts_generation() is None
    assert "triggers are missing" in caplog.text
    facts_view()
    Fact.objects.filter(key="prenom").update(value="Mika")  # no token written now
    assert [f.value for f in facts_view().core] == ["Mika"]


@pytest.mark.django_db(transaction=True)
def test_a_write_committed_by_another_connection_is_seen_at_once():
    from django.db import connections

    Fact.objects.create(key="prenom", value="Mickael", memory_type="identity")
    facts_views_clear()
    assert [f.value for f in facts_view().core] == ["Mickael"]

    def other_process():
        try:
            Fact.objects.filter(key="prenom").update(value="Mika")
        finally:
            connections.close_all()

    writer = threading.Thread(target=other_process)
    writer.start()
    writer.join()
    assert [f.value for f in facts_view().core] == ["Mika"]
    facts_views_clear()


@pytest.mark.django_db
def test_a_view_read_later_is_not_used_for_an_earlier_time(monkeypatch, time_machine):
    """A clock set back (or a caller passing an earlier ``now``) gets a fresh read: a fact
    expired at the read is active again at that earlier time."""
    from memory.services.facts import fact_store

    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)
    time_machine.move_to(timezone.now(), tick=False)
    start = timezone.now()
    fact_store(key="code_wifi", value="le code est 1937", memory_type="identity", ttl="1h")
    facts_views_clear()
    assert [f.key for f in facts_view(start + timedelta(hours=2)).core] == []
    assert [f.key for f in facts_view(start + timedelta(minutes=30)).core] == ["code_wifi"]
    facts_views_clear()


@pytest.mark.django_db
def test_a_retrieval_reads_the_facts_token_and_the_summaries_once():
    """T1, the self and goals lines and what the LLM sees share one read of each."""

    from memory.services.retrieval import auto_retrieve_preview

    Fact.objects.create(key="prenom", value="Mickael", memory_type="identity")
    with CaptureQueriesContext(connection) as queries:
        auto_retrieve_preview(message="Où est le dossier du garage ?", channel="whatsapp")
    sql = [q["sql"] for q in queries.captured_queries]
    assert len([s for s in sql if "SELECT token FROM memory_generation" in s]) == 1
    assert len([s for s in sql if 'FROM "memory_summary"' in s]) == 1
