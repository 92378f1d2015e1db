"""The FTS5 migration goes backwards and forwards, and indexes messages that existed before it."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

FTS_OBJECTS = {
    "messages_fts",
    "messages_fts_source",
    "messages_fts_insert",
    "messages_fts_update",
    "messages_fts_delete",
}


def _schema_names() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master")
        return {row[0] for row in cursor.fetchall()}


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def test_migrating_back_drops_the_fts_objects_and_forward_rebuilds_the_index():
    try:
        _migrate([("memory", "0001_initial")])
        assert not FTS_OBJECTS & _schema_names()
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO messages (channel, role, author, source, content, created_at, compacted,"
                " index_state, index_attempts, index_error) VALUES"
                " ('whatsapp', 'user', '', 'user', 'Rappel : vaccin du chat', '2026-01-01 10:00:00', 0, 'pending', 0, '')"
            )
        _migrate([("memory", "0002_messages_fts")])
        assert _schema_names() >= FTS_OBJECTS
        from memory.stores.fts import fts_search

        assert [hit.content for hit in fts_search("vaccin")] == ["Rappel : vaccin du chat"]
    finally:
        executor = MigrationExecutor(connection)
        _migrate(executor.loader.graph.leaf_nodes())
