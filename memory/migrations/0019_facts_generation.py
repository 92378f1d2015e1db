"""A token that changes with every write that can change what retrieval reads of the facts.

Auto-retrieval reads the same facts on every message (the identity facts, the
recent and important ones, the agent's self and goals) and keeps them in
memory while ``memory_generation``'s "facts" token is unchanged
(memory.services.retrieval.facts_view). The triggers are memory.db.generation's.
"""

from django.db import migrations

from memory.db import generation

FORWARD = [
    f"CREATE TABLE {generation.TABLE} (name TEXT PRIMARY KEY, token INTEGER NOT NULL)",
    f"INSERT INTO {generation.TABLE} (name, token) VALUES ('facts', random())",
    *generation.install_sql(generation.TRIGGERS_V1),
]
BACKWARD = [
    *generation.drop_sql(generation.TRIGGERS_V1),
    f"DROP TABLE IF EXISTS {generation.TABLE}",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0018_fact_kind_rank_index")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
