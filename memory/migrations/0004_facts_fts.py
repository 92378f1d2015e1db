"""Full-text search over facts: the FTS5 table facts_fts (key words + value) and its triggers.

Same shape as messages_fts (0002): an external-content table over a view that
folds ligatures, so the auto-retrieval's keyword source finds facts as well as
messages ("le code du portail" → the fact portal_code).
"""

from django.db import migrations

FOLD = "replace(replace(replace(replace({col}, 'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE')"
TEXT = "replace({p}key, '_', ' ') || ' ' || {p}value"

FORWARD = [
    f"""
    CREATE VIEW facts_fts_source AS
        SELECT id, {FOLD.format(col=TEXT.format(p=""))} AS content FROM core_memory
    """,
    """
    CREATE VIRTUAL TABLE facts_fts USING fts5(
        content,
        content='facts_fts_source',
        content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    )
    """,
    f"""
    CREATE TRIGGER facts_fts_insert AFTER INSERT ON core_memory BEGIN
        INSERT INTO facts_fts(rowid, content) VALUES (new.id, {FOLD.format(col=TEXT.format(p="new."))});
    END
    """,
    f"""
    CREATE TRIGGER facts_fts_delete AFTER DELETE ON core_memory BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content)
            VALUES ('delete', old.id, {FOLD.format(col=TEXT.format(p="old."))});
    END
    """,
    f"""
    CREATE TRIGGER facts_fts_update AFTER UPDATE OF key, value ON core_memory BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content)
            VALUES ('delete', old.id, {FOLD.format(col=TEXT.format(p="old."))});
        INSERT INTO facts_fts(rowid, content) VALUES (new.id, {FOLD.format(col=TEXT.format(p="new."))});
    END
    """,
    "INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')",
]

BACKWARD = [
    "DROP TRIGGER IF EXISTS facts_fts_update",
    "DROP TRIGGER IF EXISTS facts_fts_delete",
    "DROP TRIGGER IF EXISTS facts_fts_insert",
    "DROP TABLE IF EXISTS facts_fts",
    "DROP VIEW IF EXISTS facts_fts_source",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_index_state_skipped")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
