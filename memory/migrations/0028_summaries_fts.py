"""Full-text search over summaries: the FTS5 table summaries_fts, its triggers and vocab.

The keyword source of auto-retrieval ranked the owner's exchanges and facts only: a
detail told in a monthly summary and nowhere else (a product's name, a street, a drug)
was found by meaning alone, through one embedding of a dozen topics. Same shape as the
other indexes (memory.db.fts_schema): an external-content table over a view of the rows
still in the memory (a forgotten summary is out of it), kept by triggers, and its
document counts (fts5vocab 'row') for the OR query's budget (memory.stores.fts_rank).
"""

from django.db import migrations

from memory.db import fts_schema

VOCAB = "summaries_fts_vocab"


class Migration(migrations.Migration):
    dependencies = [("memory", "0027_fact_keys_composed")]

    operations = [
        migrations.RunSQL(
            sql=[
                *fts_schema.SUMMARIES_FTS_V1.create_sql(),
                f"CREATE VIRTUAL TABLE {VOCAB} USING fts5vocab(summaries_fts, 'row')",
            ],
            reverse_sql=[
                f"DROP TABLE IF EXISTS {VOCAB}",
                *fts_schema.SUMMARIES_FTS_V1.drop_sql(),
            ],
        )
    ]
