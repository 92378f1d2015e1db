"""RebuildFts: a migration that makes Django remake messages, core_memory or memory_summary
keeps FTS5 whole.

SQLite cannot alter most columns, so Django remakes the table (copy, drop,
rename), which SQLite refuses while the FTS views refer to it. The operations
run here through Django's own schema editor on the test database, then are
reversed, so the schema the other tests see is unchanged.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection, migrations, models
from django.db.migrations.loader import MigrationLoader

from memory.db import fts_schema
from memory.db.operations import RebuildFts
from memory.services.retrieval.facts_view import facts_generation
from memory.stores.fts import fts_rank_summaries, fts_search, fts_search_facts

pytestmark = pytest.mark.django_db(transaction=True)

# Column changes SQLite cannot make in place: Django remakes the three tables.
REMAKE_BOTH = [
    migrations.AlterField(
        model_name="message",
        name="author",
        field=models.CharField(blank=True, default="", max_length=200),
    ),
    migrations.AlterField(
        model_name="fact",
        name="channel",
        field=models.CharField(blank=True, db_index=True, default="", max_length=100),
    ),
    migrations.AlterField(
        model_name="summary",
        name="channel",
        field=models.CharField("canal", max_length=100, db_index=True),
    ),
]


@pytest.fixture(autouse=True)
def no_tasks(monkeypatch):
    from memory.services import index_queue

    monkeypatch.setattr(index_queue, "_send", lambda kind, row_id: None)


def _schema() -> dict[str, object]:
    """Every schema object; a table as its columns (a remake may reorder them)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        objects = cursor.fetchall()
        schema: dict[str, object] = {}
        for kind, name, sql in objects:
            if kind == "table" and not name.startswith(
                ("messages_fts", "facts_fts", "summaries_fts")
            ):
                cursor.execute(f'PRAGMA table_info("{name}")')
                schema[name] = sorted(row[1:] for row in cursor.fetchall())
            else:
                schema[name] = sql
        return schema


def _apply(operation, *, backwards: bool = False) -> None:
    """Run one operation as `migrate` would, from the state of the latest migrations."""
    before = MigrationLoader(connection).project_state()
    after = before.clone()
    operation.state_forwards("memory", after)
    with connection.schema_editor() as editor:
        if backwards:
            operation.database_backwards("memory", editor, after, before)
        else:
            operation.database_forwards("memory", editor, before, after)


def _column_type(table: str, column: str) -> str:
    return next(kind for name, kind, *_ in _schema()[table] if name == column)


def _integrity_check() -> None:
    with connection.cursor() as cursor:
        for table in fts_schema.CURRENT:
            cursor.execute(table.integrity_check_sql())  # raises when the index is wrong


def test_without_rebuild_fts_django_cannot_remake_the_messages_table():
    """The trap RebuildFts exists for (and proof the remake really happens)."""
    before = _schema()
    with pytest.raises(OperationalError, match="error in view messages_fts_source"):
        _apply(REMAKE_BOTH[0])
    assert _schema() == before  # the failed migration left nothing half done


def test_without_rebuild_fts_django_cannot_remake_the_summaries_table():
    """Review: since the summaries have their index (0028), a migration remaking
    memory_summary needs RebuildFts too."""
    before = _schema()
    with pytest.raises(OperationalError, match="error in view summaries_fts_source"):
        _apply(REMAKE_BOTH[2])
    assert _schema() == before


def test_rebuild_fts_lets_django_remake_messages_and_facts_and_keeps_the_index_whole():
    from memory.models import Message
    from memory.services.facts import fact_store
    from memory.services.messages import message_save

    before = _schema()
    old = message_save(channel="whatsapp", role="user", content="Le vaccin du chat est jeudi")
    fact_store(key="velo_marque", value="Un vélo Origine gravel")
    from memory.models import Summary

    summary = Summary.objects.create(channel="whatsapp", content="Mars : le vélo Origine réparé")
    operation = RebuildFts(fts=fts_schema.CURRENT, operations=REMAKE_BOTH)
    try:
        _apply(operation)
        assert _column_type("messages", "author") == "varchar(200)"
        assert _column_type("core_memory", "channel") == "varchar(100)"
        # Rows from before the remake are found; the triggers live on the new tables.
        assert [hit.message_id for hit in fts_search("vaccin")] == [old.id]
        new = message_save(channel="whatsapp", role="user", content="Rappel : vermifuge du chien")
        Message.objects.filter(pk=old.pk).update(content="Le rappel du vaccin est annulé")
        assert [hit.message_id for hit in fts_search("vermifuge")] == [new.id]
        assert [hit.message_id for hit in fts_search("annulé")] == [old.id]
        assert len(fts_search_facts(["origine"])) == 1
        assert _column_type("memory_summary", "channel") == "varchar(100)"
        assert [hit.summary_id for hit in fts_rank_summaries(["origine"])] == [summary.pk]
        Summary.objects.filter(pk=summary.pk).update(content="Mars : le vélo réparé")
        assert fts_rank_summaries(["origine"]) == []
        _integrity_check()
        # The facts generation triggers are back on the remade core_memory.
        token = facts_generation()
        assert token is not None
        fact_store(key="velo_couleur", value="Un vélo vert")
        assert facts_generation() != token
    finally:
        _apply(operation, backwards=True)
    assert _schema() == before
    assert [hit.message_id for hit in fts_search("vaccin")] == [old.id]
    _integrity_check()
