"""Compiled reads (memory.stores.compiled) return what their queryset returns, compiled once.

The pre-hook's hot lookups run as SQL compiled from the usual managers and
selectors: whatever rows those leave out (forgotten, excluded, expired,
observed, digested) the compiled SQL leaves out too, for any ids and any time.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import Fact, FactKind, Forgetting, Message
from memory.selectors import facts_active
from memory.stores.compiled import CompiledRead, ids_in, param

pytestmark = pytest.mark.django_db
BASE = datetime(2026, 6, 1, 12, tzinfo=UTC)

fact_rows = st.lists(
    st.fixed_dictionaries(
        {
            "forgotten": st.booleans(),
            "taken": st.booleans(),  # by a topic forget
            "kind": st.sampled_from([FactKind.OWNER, FactKind.SELF]),
            "expires_in_h": st.one_of(st.none(), st.integers(-48, 48)),
        }
    ),
    min_size=1,
    max_size=8,
)
message_rows = st.lists(
    st.fixed_dictionaries(
        {
            "taken": st.booleans(),
            "excluded": st.booleans(),
            "observed": st.booleans(),
            "digested": st.booleans(),
        }
    ),
    min_size=1,
    max_size=8,
)


def _facts_read(now):
    return (
        facts_active(now=now)
        .filter(pk__in=ids_in())
        .order_by("id")
        .values_list("id", "key", "expires_at")
    )


def _live_read(_now, limit):
    return (
        Message.objects.filter(pk__in=ids_in(), observed=True, digested_at__isnull=True)
        .exclude(channel=param("room"))
        .order_by("id")
        .values_list("id", "channel", "created_at")[:limit]
    )


FACTS = CompiledRead(_facts_read)
LIVE = CompiledRead(_live_read)


def _forgetting() -> Forgetting:
    return Forgetting.objects.create(topic="sujet oublié", purge_after=BASE)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=fact_rows, picked=st.lists(st.integers(0, 7)), hours=st.integers(-48, 48))
def test_facts_read_as_the_active_facts_selector_reads_them(rows, picked, hours):
    now = BASE + timedelta(hours=hours)
    with transaction.atomic():
        forgetting = _forgetting()
        facts = [
            Fact.all_objects.create(
                key=f"fait_{i}",
                value="valeur",
                forgotten=row["forgotten"],
                forgetting=forgetting if row["taken"] else None,
                kind=row["kind"],
                category="capability" if row["kind"] == FactKind.SELF else "",
                expires_at=None
                if row["expires_in_h"] is None
                else BASE + timedelta(hours=row["expires_in_h"]),
            )
            for i, row in enumerate(rows)
        ]
        ids = [facts[i % len(facts)].pk for i in picked]
        expected = list(
            facts_active(now=now)
            .filter(pk__in=ids)
            .order_by("id")
            .values_list("id", "key", "expires_at")
        )
        assert FACTS.rows(ids=ids, now=now) == expected
        transaction.set_rollback(True)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=message_rows, picked=st.lists(st.integers(0, 7)), limit=st.integers(1, 4))
def test_messages_read_as_the_message_manager_reads_them(rows, picked, limit):
    with transaction.atomic():
        forgetting = _forgetting()
        messages = [
            Message.all_objects.create(
                channel="salon" if i % 2 else "famille",
                role="user",
                content=f"message {i}",
                forgetting=forgetting if row["taken"] else None,
                memory_excluded=row["excluded"],
                observed=row["observed"],
                digested_at=BASE if row["digested"] else None,
            )
            for i, row in enumerate(rows)
        ]
        ids = [messages[i % len(messages)].pk for i in picked]
        expected = list(
            Message.objects.filter(pk__in=ids, observed=True, digested_at__isnull=True)
            .exclude(channel="famille")
            .order_by("id")
            .values_list("id", "channel", "created_at")[:limit]
        )
        assert LIVE.rows(ids=ids, room="famille", shape=(limit,)) == expected
        transaction.set_rollback(True)


def test_the_sql_is_compiled_once_per_shape(django_assert_num_queries):
    built = []

    def build(now):
        built.append(now)
        return facts_active(now=now).filter(pk__in=ids_in()).values_list("id")

    read = CompiledRead(build)
    fact = Fact.objects.create(key="prenom", value="Mickael")
    with django_assert_num_queries(3):  # one statement per call, no other
        for ids in ([fact.pk], [], [fact.pk, 999]):
            read.rows(ids=ids, now=BASE)
    assert len(built) == 1


def test_a_read_that_compares_with_the_time_needs_it():
    with pytest.raises(ValueError, match="give now"):
        FACTS.rows(ids=[1])


history_rows = st.lists(
    st.fixed_dictionaries(
        {
            "channel": st.sampled_from(["whatsapp", "email"]),
            "role": st.sampled_from(["user", "assistant", "tool"]),
            "compacted": st.booleans(),
            "taken": st.booleans(),
            "excluded": st.booleans(),
        }
    ),
    min_size=1,
    max_size=12,
)


def _fields(message: Message) -> dict:
    return {f.attname: getattr(message, f.attname) for f in Message._meta.concrete_fields}


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=history_rows, before=st.one_of(st.none(), st.integers(0, 12)), limit=st.integers(1, 6))
def test_the_history_is_the_orm_history_with_every_field(rows, before, limit):
    """THE history (compiled instances) is the ORM's read of it, field by field."""
    from memory.selectors import channel_history

    with transaction.atomic():
        forgetting = _forgetting()
        messages = [
            Message.all_objects.create(
                channel=row["channel"],
                role=row["role"],
                content=f"message {i}",
                compacted=row["compacted"],
                forgetting=forgetting if row["taken"] else None,
                memory_excluded=row["excluded"],
            )
            for i, row in enumerate(rows)
        ]
        before_id = None if before is None else messages[before % len(messages)].pk
        expected = Message.objects.filter(channel="whatsapp", compacted=False).exclude(role="tool")
        if before_id is not None:
            expected = expected.filter(id__lt=before_id)
        expected = list(expected.order_by("-id")[:limit])[::-1]
        while expected and expected[0].role == "assistant":
            expected.pop(0)
        found = channel_history(channel="whatsapp", before_id=before_id, limit=limit)
        assert [_fields(m) for m in found] == [_fields(m) for m in expected]
        assert all(not m._state.adding for m in found)  # saved rows, as the ORM gives them
        transaction.set_rollback(True)


def test_the_settings_are_read_as_saved():
    from memory.models import MemorySettings

    settings_row = MemorySettings.load()
    settings_row.max_results = 7
    settings_row.obsidian_context_notes = ["Profil.md"]
    settings_row.save()
    loaded = MemorySettings.load()
    assert (loaded.max_results, loaded.obsidian_context_notes) == (7, ["Profil.md"])
    assert loaded.auto_retrieve_enabled is True
    assert loaded.updated_at.tzinfo is not None


# Compiled reads run on the SQLite connection itself, not through Django's cursor
# wrapper: what the wrapper guaranteed still holds.


@pytest.mark.django_db(transaction=True)
def test_a_compiled_read_opens_a_closed_connection():
    from django.db import connection

    fact = Fact.objects.create(key="prenom", value="Mickael")
    connection.close()
    assert connection.connection is None
    assert FACTS.rows(ids=[fact.pk], now=BASE) == [(fact.pk, "prenom", None)]


@pytest.mark.django_db(transaction=True)
def test_a_compiled_read_refuses_inside_a_broken_transaction():
    from django.db import IntegrityError
    from django.db.transaction import TransactionManagementError

    fact = Fact.objects.create(key="prenom", value="Mickael")
    with transaction.atomic():
        with contextlib.suppress(IntegrityError):  # no savepoint around it
            Fact.objects.create(pk=fact.pk, key="doublon", value="x")
        with pytest.raises(TransactionManagementError):
            FACTS.rows(ids=[fact.pk], now=BASE)


def test_a_compiled_read_fails_with_djangos_errors():
    """An interrupted read (the pre-hook's time limit) is Django's OperationalError, as callers expect."""
    import sqlite3

    import django.db

    from memory.stores.fts import sql_deadline

    Fact.objects.create(key="prenom", value="Mickael")
    with sql_deadline(-1), pytest.raises(django.db.OperationalError, match="interrupted") as raised:
        FACTS.rows(ids=list(range(1, 5000)), now=BASE)
    assert not isinstance(raised.value, sqlite3.OperationalError)


def test_a_compiled_read_is_seen_by_whoever_counts_the_queries():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fact = Fact.objects.create(key="prenom", value="Mickael")
    with CaptureQueriesContext(connection) as queries:
        FACTS.rows(ids=[fact.pk], now=BASE)
    assert len(queries) == 1 and "json_each" in queries[0]["sql"]


def test_a_compiled_read_refuses_to_run_in_an_event_loop():
    import asyncio

    from django.core.exceptions import SynchronousOnlyOperation

    async def read():
        return FACTS.rows(ids=[1], now=BASE)

    with pytest.raises(SynchronousOnlyOperation):
        asyncio.run(read())


def test_a_compiled_read_does_not_go_through_djangos_cursor(monkeypatch):
    """The point of the raw path: no cursor wrapper on the pre-hook's hot reads (while
    queries are not being logged)."""
    from django.db import DEFAULT_DB_ALIAS, connections

    fact = Fact.objects.create(key="prenom", value="Mickael")
    db = connections[DEFAULT_DB_ALIAS]
    assert not db.queries_logged

    def no_cursor(*args, **kwargs):
        raise AssertionError("a compiled read went through Django's cursor")

    monkeypatch.setattr(db, "cursor", no_cursor)
    assert FACTS.rows(ids=[fact.pk], now=BASE) == [(fact.pk, "prenom", None)]
