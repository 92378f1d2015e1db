"""ORM reads compiled once and then run as plain SQL: the pre-hook's hot lookups.

Django builds and compiles a queryset's SQL on every evaluation: 0.3-0.5 ms of
Python (holding the GIL) for a lookup SQLite answers in a few hundredths of a
millisecond. The pre-hook runs a dozen of them on every message while the
query embedding needs the same two cores, and each one delays the others'
threads. A ``CompiledRead`` compiles its queryset once (per process) and keeps
the SQL and the ORM's own column converters; each call only binds what varies.

The queryset is still built by the usual managers and selectors
(``Message.objects``, ``facts_active``...): what they leave out (a forgotten
row, an excluded exchange, an expired fact) is left out by the same SQL, and
the values come back converted as the ORM converts them. What varies is given
through placeholders:

- ``ids_in()``: a list of ids, bound as one JSON array read by ``json_each`` (the
  same SQL for 1 or 40 ids);
- ``now``: the current time, wherever the queryset compares with it;
- ``param(name)``: a text value (a channel name); ``int_param(name)``: an integer;
- ``shape``: values that change the SQL itself (a LIMIT): one compiled SQL per shape.

``rows`` returns tuples (a ``values_list`` queryset); ``instances`` returns
model instances (a plain queryset of one model, no select_related).

Each call runs its SQL on the thread's SQLite connection itself (``raw_fetchall``),
not through Django's cursor wrapper: the wrapper rewrites the placeholders, checks
the thread and the async context and wraps every call, 30-70 µs of Python per
statement, and each access to ``django.db.connection`` is a thread-local lookup.
What the wrapper guarantees is kept: the connection is opened (and health-checked)
as Django opens it, never from an event loop's thread (``ensure_connection``
refuses), a broken transaction still refuses, errors come out as Django's
``DatabaseError`` family, and while queries are logged (DEBUG, a test counting
them) the wrapper is used so that each one is seen. Ten thousand memories,
alternating per call on one store: the pre-hook's CPU in the caller's thread p50
10.43 -> 10.02 ms (9.98 -> 9.13 in a first pair).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX
from django.db.models import Model, QuerySet
from django.db.models.expressions import RawSQL

_IDS = "\x00compiled-ids"
_PARAM = "\x00compiled-param:"
_NOW_SLOT = "\x00compiled-now"
# A time no real query asks about, to find where ``now`` goes among the parameters.
_NOW = datetime(1901, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)
# Integer placeholders: values no real query binds, each standing for one name.
_INT_BASE = -7_340_211_900_000
_int_names: dict[int, str] = {}
_int_lock = threading.Lock()


def qmark_sql(sql: str) -> str:
    """SQL written with Django's ``%s`` placeholders, as SQLite takes it (``?``): the
    rewrite Django's SQLite cursor makes on every call, with its own pattern."""
    return FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%")


def raw_fetchall(sql: str, params: list | tuple, *, qmark: str | None = None) -> list[tuple]:
    """The rows of one read on this thread's connection (see the module's docstring).

    ``sql`` uses Django's ``%s`` placeholders; ``qmark``: the same SQL already
    rewritten by ``qmark_sql`` (a statement run often rewrites it once).
    """
    db = connections[DEFAULT_DB_ALIAS]
    if db.queries_logged:
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_no_broken_transaction()
    with db.wrap_database_errors:
        return db.connection.execute(qmark or qmark_sql(sql), params).fetchall()


def ids_in() -> RawSQL:
    """The ``ids`` placeholder, for ``filter(pk__in=ids_in())`` and the like."""
    return RawSQL("SELECT value FROM json_each(%s)", [_IDS])


def param(name: str) -> str:
    """The placeholder of the text value ``name`` (given to ``rows`` as ``name=value``)."""
    return f"{_PARAM}{name}"


def int_param(name: str) -> int:
    """The placeholder of the integer value ``name`` (given to ``rows`` as ``name=value``)."""
    with _int_lock:
        for value, known in _int_names.items():
            if known == name:
                return value
        value = _INT_BASE - len(_int_names)
        _int_names[value] = name
        return value


@dataclass(frozen=True)
class _Compiled:
    sql: str
    qmark: str  # the same, as SQLite takes it
    params: tuple
    slots: tuple[tuple[int, str], ...]
    converters: tuple[tuple[int, tuple, Any], ...]
    model: type[Model] | None
    fields: tuple[int, int, tuple[str, ...]] | None  # model columns: start, end, attnames


class CompiledRead:
    """One read: ``build(now, *shape)`` returns the queryset (placeholders inside)."""

    def __init__(self, build: Callable[..., QuerySet]) -> None:
        self._build = build
        self._compiled: dict[tuple, _Compiled] = {}
        self._lock = threading.Lock()

    def rows(self, **bind: Any) -> list[tuple]:
        """The rows as tuples; ``bind``: ``ids``, ``now``, ``shape`` and the named values."""
        compiled = self._compile(bind.get("shape", ()))
        return [tuple(row) for row in self._run(compiled, **bind)]

    def instances(self, **bind: Any) -> list[Model]:
        """The rows as model instances (the queryset's model); ``bind`` as for ``rows``."""
        compiled = self._compile(bind.get("shape", ()), model=True)
        start, end, attnames = compiled.fields
        return [
            compiled.model.from_db(DEFAULT_DB_ALIAS, attnames, row[start:end])
            for row in self._run(compiled, **bind)
        ]

    @staticmethod
    def _run(
        compiled: _Compiled,
        *,
        ids: Iterable[int] = (),
        now: datetime | None = None,
        shape: tuple = (),
        **values: object,
    ) -> list[list] | list[tuple]:
        db = connections[DEFAULT_DB_ALIAS]
        bound = list(compiled.params)
        for i, name in compiled.slots:
            if name == _IDS:
                bound[i] = json.dumps([int(pk) for pk in ids])
            elif name == _NOW_SLOT:
                if now is None:
                    raise ValueError("this read compares with the current time: give now")
                bound[i] = db.ops.adapt_datetimefield_value(now)
            else:
                bound[i] = values[name]
        fetched = raw_fetchall(compiled.sql, bound, qmark=compiled.qmark)
        if not compiled.converters:
            return fetched
        rows = [list(row) for row in fetched]
        # The ORM's own conversions (dates, booleans, JSON...), as its iterables apply them.
        for row in rows:
            for pos, convs, expression in compiled.converters:
                value = row[pos]
                for convert in convs:
                    value = convert(value, expression, db)
                row[pos] = value
        return rows

    def _compile(self, shape: tuple, *, model: bool = False) -> _Compiled:
        key = (connection.vendor, shape, model)
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled[key] = self._make(shape, model=model)
        return compiled

    def _make(self, shape: tuple, *, model: bool) -> _Compiled:
        queryset = self._build(_NOW, *shape)
        compiler = queryset.query.get_compiler(using=connection.alias)
        sql, params = compiler.as_sql()
        now_db = connection.ops.adapt_datetimefield_value(_NOW)
        slots: list[tuple[int, str]] = []
        for i, value in enumerate(params):
            if value == _IDS:
                slots.append((i, _IDS))
            elif value in (now_db, _NOW):
                slots.append((i, _NOW_SLOT))
            elif isinstance(value, str) and value.startswith(_PARAM):
                slots.append((i, value.removeprefix(_PARAM)))
            elif isinstance(value, int) and value in _int_names:
                slots.append((i, _int_names[value]))
        select = compiler.select[: compiler.col_count]
        converters = compiler.get_converters([column for column, _, _ in select])
        fields = None
        if model:
            info = compiler.klass_info
            start, end = info["select_fields"][0], info["select_fields"][-1] + 1
            fields = (start, end, tuple(c[0].target.attname for c in select[start:end]))
        return _Compiled(
            sql=sql,
            qmark=qmark_sql(sql),
            params=tuple(params),
            slots=tuple(slots),
            converters=tuple((pos, tuple(c), e) for pos, (c, e) in converters.items()),
            model=queryset.model if model else None,
            fields=fields,
        )
