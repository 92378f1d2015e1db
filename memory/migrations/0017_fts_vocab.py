"""Document frequencies of the FTS5 indexes (fts5vocab 'row' tables).

The keyword source's OR query costs what its words match: a word found in
thousands of messages makes FTS5 score and sort every one of them. With each
word's document count (memory.stores.fts_rank.or_expression_within_budget) a query that
would rank too many rows counts its most frequent words only in pairs. A vocab table
reads its FTS table's index by name, so it survives the FTS table being
dropped and recreated (memory.db.operations.RebuildFts).
"""

from django.db import migrations

FORWARD = [
    "CREATE VIRTUAL TABLE messages_fts_vocab USING fts5vocab(messages_fts, 'row')",
    "CREATE VIRTUAL TABLE facts_fts_vocab USING fts5vocab(facts_fts, 'row')",
]
BACKWARD = [
    "DROP TABLE IF EXISTS facts_fts_vocab",
    "DROP TABLE IF EXISTS messages_fts_vocab",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0016_self_and_goals")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
