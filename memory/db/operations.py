"""A migration operation that keeps the FTS5 indexes alive across table remakes.

SQLite cannot ALTER most columns: Django remakes the table (create a copy,
copy the rows, drop, rename). SQLite refuses that rename while a view refers
to the table ("error in view messages_fts_source"), and triggers on the old
table vanish with it. ``RebuildFts`` wraps ordinary operations: it drops the
FTS views and triggers (and the FTS tables), runs the wrapped operations,
recreates the FTS objects of the version it was given, rebuilds the index
from the rows and runs FTS5's integrity check; the facts generation triggers
(memory.db.generation) are put back too, once their table exists. Use it for
any migration that changes ``messages``, ``core_memory`` or ``memory_summary``:

    RebuildFts(fts=fts_schema.CURRENT, operations=[migrations.AddField(...)])
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.migrations.operations.base import Operation

from memory.db import generation
from memory.db.fts_schema import FtsTable


def _run(schema_editor, statements: Sequence[str]) -> None:
    for sql in statements:
        schema_editor.execute(sql)


class RebuildFts(Operation):
    reduces_to_sql = False
    reversible = True

    def __init__(
        self,
        *,
        operations: Sequence[Operation],
        fts: Sequence[FtsTable],
        previous_fts: Sequence[FtsTable] | None = None,
    ) -> None:
        self.operations = list(operations)
        self.fts = tuple(fts)
        # What to reinstall when the migration is reversed (default: the same).
        self.previous_fts = tuple(previous_fts) if previous_fts is not None else self.fts

    def deconstruct(self):
        kwargs = {"operations": self.operations, "fts": self.fts}
        if self.previous_fts != self.fts:
            kwargs["previous_fts"] = self.previous_fts
        return self.__class__.__qualname__, [], kwargs

    def state_forwards(self, app_label, state) -> None:
        for operation in self.operations:
            operation.state_forwards(app_label, state)

    def _states(self, app_label, before):
        """The project state before each wrapped operation, and after the last."""
        states = [before]
        for operation in self.operations:
            state = states[-1].clone()
            operation.state_forwards(app_label, state)
            states.append(state)
        return states

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        sqlite = schema_editor.connection.vendor == "sqlite"
        if sqlite:
            for table in self.previous_fts:
                _run(schema_editor, table.drop_sql())
        states = self._states(app_label, from_state)
        for index, operation in enumerate(self.operations):
            operation.database_forwards(app_label, schema_editor, states[index], states[index + 1])
        if sqlite:
            self._install(schema_editor, self.fts)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        sqlite = schema_editor.connection.vendor == "sqlite"
        if sqlite:
            for table in self.fts:
                _run(schema_editor, table.drop_sql())
        # to_state is the state before this migration.
        states = self._states(app_label, to_state)
        for index in reversed(range(len(self.operations))):
            self.operations[index].database_backwards(
                app_label, schema_editor, states[index + 1], states[index]
            )
        if sqlite:
            self._install(schema_editor, self.previous_fts)

    @staticmethod
    def _install(schema_editor, tables: Sequence[FtsTable]) -> None:
        for table in tables:
            _run(schema_editor, table.create_sql())
            # Raises (SQLITE_CORRUPT_VTAB) if the index disagrees with its rows.
            schema_editor.execute(table.integrity_check_sql())
        # A remade core_memory lost its generation triggers (before 0019 there are none).
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = %s",
                [generation.TABLE],
            )
            if cursor.fetchone()[0]:
                _run(schema_editor, generation.install_sql())

    def describe(self) -> str:
        names = ", ".join(t.name for t in self.fts)
        return f"Run {len(self.operations)} operation(s) with the FTS indexes ({names}) rebuilt"

    @property
    def migration_name_fragment(self) -> str:
        return "rebuild_fts"
