"""The agent's self and goals: Fact.kind (owner / self / goal) and Fact.category.

Adding NOT NULL columns with a default makes Django remake core_memory on
SQLite, so the operations run inside RebuildFts; the facts index moves to
version 3, which leaves the agent's items out of the owner's keyword search.
"""

import django.db.models.manager
from django.db import migrations, models

from memory.db import fts_schema
from memory.db.operations import RebuildFts


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0015_observed_rooms"),
    ]

    operations = [
        RebuildFts(
            fts=(fts_schema.MESSAGES_FTS_V2, fts_schema.FACTS_FTS_V3),
            previous_fts=(fts_schema.MESSAGES_FTS_V2, fts_schema.FACTS_FTS_V2),
            operations=[
                migrations.AddField(
                    model_name="fact",
                    name="category",
                    field=models.CharField(
                        blank=True, default="", max_length=24, verbose_name="catégorie"
                    ),
                ),
                migrations.AddField(
                    model_name="fact",
                    name="kind",
                    field=models.CharField(
                        choices=[
                            ("owner", "Propriétaire"),
                            ("self", "Moi (l'agent)"),
                            ("goal", "Objectif de l'agent"),
                        ],
                        db_index=True,
                        default="owner",
                        max_length=8,
                        verbose_name="genre",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="AgentItem",
            fields=[],
            options={
                "verbose_name": "souvenir de l'agent sur lui-même",
                "verbose_name_plural": "moi & objectifs de l'agent",
                "ordering": ["kind", "category", "-importance", "key"],
                "proxy": True,
                "base_manager_name": "all_objects",
                "default_manager_name": "objects",
                "indexes": [],
                "constraints": [],
            },
            bases=("memory.fact",),
            managers=[
                ("objects", django.db.models.manager.Manager()),
                ("all_objects", django.db.models.manager.Manager()),
            ],
        ),
    ]
