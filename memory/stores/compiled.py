"""ORM reads compiled once and then run as plain SQL: the pre-hook's hot lookups.

Django builds and compiles a queryset's SQL on every evaluation: 0.3-0.5 ms of
Python (holding the GIL) for a lookup SQLite answers in a few hundredths of a
millisecond. The pre-hook runs a dozen of them on every message while the
query embedding needs the same two cores, and each one delays the others'
threads. A ``CompiledRead`` compiles its queryset once (per process) and keeps
the SQL; each call only binds what varies and converts the columns it names.

The queryset is still built by the usual managers and selectors
(``Message.objects``, ``facts_active``...): what they leave out (a forgotten
row, an excluded exchange, an expired fact) is left out by the same SQL. What
varies is given through placeholders:

- ``ids_in()``: a list of ids, bound as one JSON array read by ``json_each`` (the
  same SQL for 1 or 40 ids);
- ``now``: the current time, wherever the queryset compares with it;
- ``param(name)``: a text value (a channel name);
- ``shape``: values that change the SQL itself (a LIMIT): one compiled SQL per shape.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

_IDS = "\x00compiled-ids"
_PARAM = "\x00compiled-param:"
# A time no real query asks about, to find where ``now`` goes among the parameters.
_NOW = datetime(1901, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)


def ids_in() -> RawSQL:
    """The ``ids`` placeholder, for ``filter(pk__in=ids_in())`` and the like."""
    return RawSQL("SELECT value FROM json_each(%s)", [_IDS])


def param(name: str) -> str:
    """The placeholder of the text value ``name`` (given to ``rows`` as ``name=value``)."""
    return f"{_PARAM}{name}"


def as_datetime(value: object) -> datetime | None:
    """A DateTimeField column read by raw SQL (naive UTC text in SQLite) as an aware datetime."""
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


class CompiledRead:
    """One read: ``build(now, *shape)`` returns a ``values_list`` queryset (placeholders inside).

    ``converters``: column index -> function applied to that column of each row
    (e.g. ``as_datetime`` for a date column); other columns come as SQLite gives them.
    """

    def __init__(
        self,
        build: Callable[..., QuerySet],
        *,
        converters: dict[int, Callable[[Any], Any]] | None = None,
    ) -> None:
        self._build = build
        self._converters = sorted((converters or {}).items())
        self._compiled: dict[tuple, tuple[str, tuple, list[tuple[int, str]]]] = {}
        self._lock = threading.Lock()

    def rows(
        self,
        *,
        ids: Iterable[int] = (),
        now: datetime | None = None,
        shape: tuple = (),
        **values: str,
    ) -> list[tuple]:
        sql, params, slots = self._compile(shape)
        bound = list(params)
        for i, name in slots:
            if name == _IDS:
                bound[i] = json.dumps([int(pk) for pk in ids])
            elif name == _NOW:
                if now is None:
                    raise ValueError("this read compares with the current time: give now")
                bound[i] = connection.ops.adapt_datetimefield_value(now)
            else:
                bound[i] = values[name]
        with connection.cursor() as cursor:
            cursor.execute(sql, bound)
            rows = cursor.fetchall()
        if not self._converters:
            return rows
        return [self._convert(row) for row in rows]

    def _convert(self, row: Sequence) -> tuple:
        row = list(row)
        for i, convert in self._converters:
            row[i] = convert(row[i])
        return tuple(row)

    def _compile(self, shape: tuple) -> tuple[str, tuple, list[tuple[int, str]]]:
        key = (connection.vendor, shape)
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                sql, params = self._build(_NOW, *shape).query.sql_with_params()
                now_db = connection.ops.adapt_datetimefield_value(_NOW)
                slots: list[tuple[int, str]] = []
                for i, value in enumerate(params):
                    if value == _IDS:
                        slots.append((i, _IDS))
                    elif value in (now_db, _NOW):
                        slots.append((i, _NOW))
                    elif isinstance(value, str) and value.startswith(_PARAM):
                        slots.append((i, value.removeprefix(_PARAM)))
                compiled = (sql, tuple(params), slots)
                self._compiled[key] = compiled
        return compiled
