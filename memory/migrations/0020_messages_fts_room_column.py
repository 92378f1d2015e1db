"""The messages index moves to version 3: an observed room's messages in their own column.

The keyword source of auto-retrieval ranks the owner's exchanges only; before, a
busy room's messages were ranked with them and dropped after the cut, taking the
exchanges' places. The column vocabulary gives each word's document count per
column, for the keyword query's budget (memory.stores.fts_rank.or_expression_within_budget).
Nothing else changes: no table is remade, the index is rebuilt from the rows.
"""

from django.db import migrations

from memory.db import fts_schema
from memory.db.operations import RebuildFts


class Migration(migrations.Migration):
    dependencies = [("memory", "0019_facts_generation")]

    operations = [
        RebuildFts(
            fts=(fts_schema.MESSAGES_FTS_V3,),
            previous_fts=(fts_schema.MESSAGES_FTS_V2,),
            operations=[],
        ),
        migrations.RunSQL(
            sql=[
                "CREATE VIRTUAL TABLE messages_fts_col_vocab USING fts5vocab(messages_fts, 'col')"
            ],
            reverse_sql=["DROP TABLE IF EXISTS messages_fts_col_vocab"],
        ),
    ]
