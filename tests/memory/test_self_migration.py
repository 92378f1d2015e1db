"""Migration 0016 (the agent's self and goals) keeps every FTS object, goes back and forth,
and the facts index leaves the agent's items out."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memory.stores.fts import fts_search_facts

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("memory", "0015_observed_rooms")
AFTER = ("memory", "0016_self_and_goals")
FTS_OBJECTS = {
    f"{name}{suffix}"
    for name in ("messages_fts", "facts_fts")
    for suffix in ("", "_source", "_insert", "_update", "_delete")
}


def _schema_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master")
        return {row[0] for row in cursor.fetchall()}


def _migrate(target) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor


def _fact_model(target):
    executor = MigrationExecutor(connection)
    return executor.loader.project_state(target).apps.get_model("memory", "Fact")


def _found(word: str) -> list[int]:
    # Unbounded: the bound reads the index's vocabulary tables, which migration 0017 adds.
    return [hit.fact_id for hit in fts_search_facts([word], bounded=False)]


def test_0015_keeps_the_fts_objects_and_the_facts_index_leaves_the_agents_items_out():
    try:
        _migrate([BEFORE])
        old = _fact_model(BEFORE).objects.create(key="velo", value="Il a un vélo rouge")
        assert _found("velo") == [old.id]

        _migrate([AFTER])
        assert _schema_names() >= FTS_OBJECTS
        Fact = _fact_model(AFTER)
        assert Fact.objects.get(pk=old.id).kind == "owner"
        assert _found("velo") == [old.id]
        item = Fact.objects.create(
            key="self_velo",
            value="Je ne sais pas faire de vélo",
            kind="self",
            category="limitation",
        )
        assert _found("velo") == [old.id]
        Fact.objects.filter(pk=item.id).update(kind="owner", category="")
        assert sorted(_found("velo")) == sorted([old.id, item.id])

        _migrate([BEFORE])  # reversible: the version 2 index is back, with both rows
        assert _schema_names() >= FTS_OBJECTS
        assert sorted(_found("velo")) == sorted([old.id, item.id])
    finally:
        executor = MigrationExecutor(connection)
        _migrate(executor.loader.graph.leaf_nodes())
