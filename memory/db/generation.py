"""The facts generation token's table and triggers (see memory.services.retrieval.facts_view).

Triggers on core_memory write a new random token into ``memory_generation`` on
every insert, delete, and update of a column the cached facts reads use; an
access count or an indexing state leaves it alone. Random, not a counter: a
rolled-back transaction's token never comes back for different content.
Triggers go with their table when Django remakes it: ``RebuildFts`` puts these
back (``install_sql``) after any operation it wraps.
"""

from __future__ import annotations

TABLE = "memory_generation"
# The columns of core_memory that the cached reads select, filter or sort on.
WATCHED = (
    "key, value, memory_type, importance, channel, expires_at, created_at, updated_at, "
    "forgotten, forgetting_id, kind, category"
)
_BUMP = f"UPDATE {TABLE} SET token = random() WHERE name = 'facts'"
TRIGGERS_V1 = {
    "core_memory_generation_insert": f"AFTER INSERT ON core_memory BEGIN {_BUMP}; END",
    "core_memory_generation_delete": f"AFTER DELETE ON core_memory BEGIN {_BUMP}; END",
    "core_memory_generation_update": (
        f"AFTER UPDATE OF {WATCHED} ON core_memory BEGIN {_BUMP}; END"
    ),
}
TRIGGERS = tuple(TRIGGERS_V1)


def install_sql(triggers: dict[str, str] = TRIGGERS_V1) -> list[str]:
    """Create the triggers that are missing (the table itself is the migration's)."""
    return [f"CREATE TRIGGER IF NOT EXISTS {name} {body}" for name, body in triggers.items()]


def drop_sql(triggers: dict[str, str] = TRIGGERS_V1) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {name}" for name in reversed(triggers)]
