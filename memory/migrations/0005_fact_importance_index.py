"""An index on core_memory.importance (the retrieval's T1 source reads important facts).

Django's SQLite backend applies an AlterField by remaking the table (create,
copy, drop, rename), which would break the facts_fts_source view and drop the
facts_fts triggers of 0004. So the state says db_index=True while the database
gets a plain CREATE INDEX. Any later migration that remakes core_memory or
messages must drop and recreate their FTS views and triggers around it.
"""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_facts_fts")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="fact",
                    name="importance",
                    field=models.FloatField(
                        db_index=True,
                        default=0.6,
                        validators=[
                            django.core.validators.MinValueValidator(0.0),
                            django.core.validators.MaxValueValidator(1.0),
                        ],
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "CREATE INDEX core_memory_importance_idx ON core_memory (importance)",
                    reverse_sql="DROP INDEX IF EXISTS core_memory_importance_idx",
                ),
            ],
        ),
    ]
