"""Full-text search over messages: the FTS5 table messages_fts and its triggers.

messages_fts is an external-content table (it stores the index, not a copy of
the text). Its content table is the view messages_fts_source, which folds the
ligatures œ/æ to oe/ae: FTS5's unicode61 tokenizer removes diacritics but keeps
ligatures, so "oeuvre" would never find "œuvre". Queries fold them the same way
(memory.stores.fts). The triggers keep the index in step with every insert,
update and delete; a delete passes the old (folded) values, as FTS5 requires.
"""

from django.db import migrations

FOLD = "replace(replace(replace(replace({col}, 'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE')"

FORWARD = [
    f"""
    CREATE VIEW messages_fts_source AS
        SELECT id, {FOLD.format(col="content")} AS content FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content,
        content='messages_fts_source',
        content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    f"""
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, {FOLD.format(col="new.content")});
    END
    """,
    f"""
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES ('delete', old.id, {FOLD.format(col="old.content")});
    END
    """,
    f"""
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES ('delete', old.id, {FOLD.format(col="old.content")});
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, {FOLD.format(col="new.content")});
    END
    """,
    # Index the messages that existed before this migration.
    "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
]

BACKWARD = [
    "DROP TRIGGER IF EXISTS messages_fts_update",
    "DROP TRIGGER IF EXISTS messages_fts_delete",
    "DROP TRIGGER IF EXISTS messages_fts_insert",
    "DROP TABLE IF EXISTS messages_fts",
    "DROP VIEW IF EXISTS messages_fts_source",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
