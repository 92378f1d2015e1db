"""The facts every retrieval reads, kept in memory until they change.

On every message the pre-hook reads the same facts: the identity facts, the
recent and the important ones (T1's list), the agent's self and goals. They
change far less often than messages arrive, so a process keeps the last read
(``FactsView``) and uses it again while three things hold:

- the database's "facts" generation token is the one it was read under: triggers
  on core_memory write a new random token on every insert, delete and update of
  a column these reads use (memory.db.generation), whatever wrote it (the ORM, a bulk
  update, another process, the admin). The token is read on the caller's own
  connection, so a transaction sees its own writes and another connection does
  not see them before they commit;
- the clock has not reached the first expiry among the active facts (an expired
  fact leaves the reads at once), nor gone back before the read;
- the triggers are all there (a migration that remade core_memory would drop
  them): without them nothing is cached.

The recent list is cut at use time (a fact leaves the window as the clock
moves, without any write).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from memory.db.generation import TABLE, TRIGGERS
from memory.models import Fact, FactKind, MemoryType
from memory.services.formatting import BlockLine, clean_text

logger = logging.getLogger(__name__)

CORE_FACTS_MAX = 8
T1_IMPORTANCE = 0.8
T1_LIST_MAX = 12
# The agent's self and goals in every block: the most important ones, a few lines.
SUMMARY_SELF_MAX = 8
SUMMARY_GOALS_MAX = 4
# Views kept per process (one per database in use).
VIEWS_MAX = 4


@dataclass(frozen=True)
class FactsView:
    """One read of the facts retrieval uses on every message."""

    core: tuple[Fact, ...]
    # (fact id, importance, created_at) of the newest facts, newest first: T1's
    # recent list at any time is the prefix still inside the window.
    recent: tuple[tuple[int, float, datetime], ...]
    important: tuple[tuple[int, float], ...]
    selves: tuple[BlockLine, ...]
    goals: tuple[BlockLine, ...]
    # When it was read, and the first expiry among the active facts after that
    # (None: none expires): it holds for read_at <= now < valid_until.
    read_at: datetime
    valid_until: datetime | None

    def recent_at(self, now: datetime, window: timedelta) -> list[tuple[int, float]]:
        """T1's recent facts at ``now``: those still inside the window."""
        return [
            (pk, importance) for pk, importance, created in self.recent if created >= now - window
        ]


_views: dict[tuple, tuple[int, FactsView]] = {}
# (database, schema version) -> whether the generation triggers are all there.
_triggers_present: dict[tuple, bool] = {}
_lock = threading.Lock()


def facts_view(now: datetime | None = None) -> FactsView:
    """The facts retrieval reads at ``now``: from memory while they are unchanged, else read."""
    now = now or timezone.now()
    token = facts_generation()
    key = connection.settings_dict["NAME"]
    if token is not None:
        cached = _views.get(key)
        if cached is not None and cached[0] == token:
            view = cached[1]
            if view.read_at <= now and (view.valid_until is None or now < view.valid_until):
                return view
    view = _facts_read(now)
    if token is not None:
        with _lock:
            if len(_views) >= VIEWS_MAX and key not in _views:
                _views.clear()
            _views[key] = (token, view)
    return view


def facts_generation() -> int | None:
    """The facts' generation token as this connection sees it; None when the triggers are missing.

    Whether the triggers are there is read from sqlite_master once per schema
    version of the database (SQLite bumps it on every CREATE or DROP, a trigger's
    included), not on every message.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT token FROM {TABLE} WHERE name = 'facts'),"
            " (SELECT schema_version FROM pragma_schema_version)"
        )
        token, schema_version = cursor.fetchone()
        key = (connection.settings_dict["NAME"], schema_version)
        present = _triggers_present.get(key)
        if present is None:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (%s, %s, %s)",
                list(TRIGGERS),
            )
            present = cursor.fetchone()[0] == len(TRIGGERS)
            with _lock:
                if len(_triggers_present) >= VIEWS_MAX:
                    _triggers_present.clear()
                _triggers_present[key] = present
    if not present:
        logger.warning("the facts generation triggers are missing: facts are read on every message")
        return None
    return token


def facts_views_clear() -> None:
    """Forget every kept view and trigger check (tests). A restore needs no call: it runs
    with the service stopped, and a restored file has its own generation token."""
    with _lock:
        _views.clear()
        _triggers_present.clear()


def _facts_read(now: datetime) -> FactsView:
    from memory.selectors import facts_active

    active = facts_active(now=now)
    core = active.filter(memory_type=MemoryType.IDENTITY).order_by("-importance", "-updated_at")
    others = active.exclude(memory_type=MemoryType.IDENTITY)
    recent = others.order_by("-created_at", "-id").values_list("id", "importance", "created_at")[
        :T1_LIST_MAX
    ]
    important = (
        others.filter(importance__gte=T1_IMPORTANCE)
        .order_by("-importance", "-updated_at")
        .values_list("id", "importance")[:T1_LIST_MAX]
    )
    order = ("-importance", "-updated_at", "-id")
    selves = facts_active(kind=FactKind.SELF, now=now).order_by(*order)[:SUMMARY_SELF_MAX]
    goals = facts_active(kind=FactKind.GOAL, now=now).order_by(*order)[:SUMMARY_GOALS_MAX]
    next_expiry = (
        Fact.all_objects.filter(forgetting__isnull=True, forgotten=False, expires_at__gt=now)
        .order_by("expires_at")
        .values_list("expires_at", flat=True)
        .first()
    )
    return FactsView(
        core=tuple(core[:CORE_FACTS_MAX]),
        recent=tuple(recent),
        important=tuple(important),
        selves=tuple(BlockLine(i.category_label.lower(), clean_text(i.value)) for i in selves),
        goals=tuple(
            BlockLine(f"objectif · {i.category_label.lower()}", clean_text(i.value)) for i in goals
        ),
        read_at=now,
        valid_until=next_expiry,
    )
