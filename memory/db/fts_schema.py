"""The FTS5 tables over messages, facts and summaries, as SQL, versioned.

Each version is the complete set of objects (a view folding ligatures as the
content table, the external-content FTS5 table, three triggers). A migration
names the version it installs, so replaying old migrations on a fresh database
never meets a definition that refers to columns not created yet. To change an
FTS definition, add a version here and a migration that installs it with
``memory.db.operations.RebuildFts``.
"""

from __future__ import annotations

from dataclasses import dataclass

FOLD = "replace(replace(replace(replace({col}, 'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE')"


@dataclass(frozen=True)
class FtsTable:
    """One FTS5 index: its objects' names and the SQL that creates them."""

    name: str
    table: str
    view_sql: str
    trigger_sql: tuple[str, ...]
    columns: tuple[str, ...] = ("content",)

    @property
    def view(self) -> str:
        return f"{self.name}_source"

    @property
    def triggers(self) -> tuple[str, ...]:
        return tuple(f"{self.name}_{op}" for op in ("insert", "delete", "update"))

    def create_sql(self) -> list[str]:
        return [
            self.view_sql,
            f"""
            CREATE VIRTUAL TABLE IF NOT EXISTS {self.name} USING fts5(
                {", ".join(self.columns)},
                content='{self.view}',
                content_rowid='id',
                tokenize='unicode61 remove_diacritics 2'
            )
            """,
            *self.trigger_sql,
            f"INSERT INTO {self.name}({self.name}) VALUES ('rebuild')",
        ]

    def drop_sql(self, *, keep_table: bool = False) -> list[str]:
        sql = [f"DROP TRIGGER IF EXISTS {t}" for t in self.triggers]
        if not keep_table:
            sql.append(f"DROP TABLE IF EXISTS {self.name}")
        sql.append(f"DROP VIEW IF EXISTS {self.view}")
        return sql

    def integrity_check_sql(self) -> str:
        # rank 1: also compare the index with its content (the view).
        return f"INSERT INTO {self.name}({self.name}, rank) VALUES ('integrity-check', 1)"


def _indexed_fts(
    name: str, table: str, text: str | dict[str, str], visible: str, watched: str
) -> FtsTable:
    """An FTS index over ``text`` of the rows of ``table`` where ``visible`` holds.

    ``text``: one expression (the column ``content``), or one per column by name.
    """
    texts = {"content": text} if isinstance(text, str) else dict(text)
    names = ", ".join(texts)

    def folded(prefix: str) -> list[str]:
        return [FOLD.format(col=expr.format(p=prefix)) for expr in texts.values()]

    def cols(prefix: str) -> str:
        return ", ".join(folded(prefix))

    def cond(prefix: str) -> str:
        return visible.format(p=prefix)

    view_columns = ", ".join(
        f"{expr} AS {column}" for expr, column in zip(folded(""), texts, strict=True)
    )
    return FtsTable(
        name=name,
        table=table,
        columns=tuple(texts),
        view_sql=f"""
            CREATE VIEW {name}_source AS
                SELECT id, {view_columns} FROM {table} WHERE {cond("")}
        """,
        trigger_sql=(
            f"""
            CREATE TRIGGER {name}_insert AFTER INSERT ON {table} WHEN {cond("new.")} BEGIN
                INSERT INTO {name}(rowid, {names}) VALUES (new.id, {cols("new.")});
            END
            """,
            f"""
            CREATE TRIGGER {name}_delete AFTER DELETE ON {table} WHEN {cond("old.")} BEGIN
                INSERT INTO {name}({name}, rowid, {names}) VALUES ('delete', old.id, {cols("old.")});
            END
            """,
            f"""
            CREATE TRIGGER {name}_update AFTER UPDATE OF {watched} ON {table} BEGIN
                INSERT INTO {name}({name}, rowid, {names})
                    SELECT 'delete', old.id, {cols("old.")} WHERE {cond("old.")};
                INSERT INTO {name}(rowid, {names})
                    SELECT new.id, {cols("new.")} WHERE {cond("new.")};
            END
            """,
        ),
    )


# Version 2: forgotten rows (and the exchanges that asked to forget) are out of the index.
MESSAGES_FTS_V2 = _indexed_fts(
    "messages_fts",
    "messages",
    "{p}content",
    "{p}forgetting_id IS NULL AND {p}memory_excluded = 0",
    "content, forgetting_id, memory_excluded",
)
FACTS_FTS_V2 = _indexed_fts(
    "facts_fts",
    "core_memory",
    "replace({p}key, '_', ' ') || ' ' || {p}value",
    "{p}forgotten = 0 AND {p}forgetting_id IS NULL",
    "key, value, forgotten, forgetting_id",
)

# Version 3 (0015): the agent's self and goals (Fact.kind) are out of the owner's facts index;
# the self tools search them by meaning (memory.services.self_memory).
FACTS_FTS_V3 = _indexed_fts(
    "facts_fts",
    "core_memory",
    "replace({p}key, '_', ' ') || ' ' || {p}value",
    "{p}forgotten = 0 AND {p}forgetting_id IS NULL AND {p}kind = 'owner'",
    "key, value, forgotten, forgetting_id, kind",
)

# Version 3 (0020): an observed room's messages are indexed in their own column, ``room``.
# The keyword source ranks the owner's exchanges only (``{content} : …``): ranked with
# them, a busy room's messages took the top places and were dropped after the cut
# (and cost most of the ranking). Text search and forgetting match both columns.
MESSAGES_FTS_V3 = _indexed_fts(
    "messages_fts",
    "messages",
    {
        "content": "CASE WHEN {p}observed THEN '' ELSE {p}content END",
        "room": "CASE WHEN {p}observed THEN {p}content ELSE '' END",
    },
    "{p}forgetting_id IS NULL AND {p}memory_excluded = 0",
    "content, forgetting_id, memory_excluded, observed",
)

# Version 1 (0028): the channels' summaries, for the keyword source. A monthly summary tells
# of a dozen topics in words no question shares whole; its rare words (a product, a street,
# a drug) found it by meaning only when its one embedding stood near the question. A
# forgotten summary (forgetting_id) is out of the index, as messages and facts are.
SUMMARIES_FTS_V1 = _indexed_fts(
    "summaries_fts",
    "memory_summary",
    "{p}content",
    "{p}forgetting_id IS NULL",
    "content, forgetting_id",
)

CURRENT = (MESSAGES_FTS_V3, FACTS_FTS_V3, SUMMARIES_FTS_V1)


# Version 1 (migrations 0002 and 0004): every row indexed. Kept to reverse 0006.
MESSAGES_FTS_V1 = _indexed_fts("messages_fts", "messages", "{p}content", "1", "content")
FACTS_FTS_V1 = _indexed_fts(
    "facts_fts", "core_memory", "replace({p}key, '_', ' ') || ' ' || {p}value", "1", "key, value"
)
