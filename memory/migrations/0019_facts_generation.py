"""A token that changes with every write that can change what retrieval reads of the facts.

Auto-retrieval reads the same facts on every message (the identity facts, the
recent and important ones, the agent's self and goals). It keeps them in
memory while ``memory_generation``'s "facts" token is unchanged
(memory.services.retrieval.facts_view). Triggers on core_memory write a new
random token on every insert, delete, and update of a column those reads use;
an access count or an indexing state (updated on every message and every
indexing pass) leaves it alone. Random, not a counter: a rolled-back
transaction's token never comes back for different content.
"""

from django.db import migrations

# The columns of core_memory that the cached reads select, filter or sort on.
WATCHED = (
    "key, value, memory_type, importance, channel, expires_at, created_at, updated_at, "
    "forgotten, forgetting_id, kind, category"
)
BUMP = "UPDATE memory_generation SET token = random() WHERE name = 'facts'"

FORWARD = [
    "CREATE TABLE memory_generation (name TEXT PRIMARY KEY, token INTEGER NOT NULL)",
    "INSERT INTO memory_generation (name, token) VALUES ('facts', random())",
    f"CREATE TRIGGER core_memory_generation_insert AFTER INSERT ON core_memory BEGIN {BUMP}; END",
    f"CREATE TRIGGER core_memory_generation_delete AFTER DELETE ON core_memory BEGIN {BUMP}; END",
    f"CREATE TRIGGER core_memory_generation_update AFTER UPDATE OF {WATCHED} ON core_memory "
    f"BEGIN {BUMP}; END",
]
BACKWARD = [
    "DROP TRIGGER IF EXISTS core_memory_generation_update",
    "DROP TRIGGER IF EXISTS core_memory_generation_delete",
    "DROP TRIGGER IF EXISTS core_memory_generation_insert",
    "DROP TABLE IF EXISTS memory_generation",
]


class Migration(migrations.Migration):
    dependencies = [("memory", "0018_fact_kind_rank_index")]

    operations = [migrations.RunSQL(sql=FORWARD, reverse_sql=BACKWARD)]
