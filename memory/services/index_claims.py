"""The claim step of the indexing state machine (memory.services.indexing): a task's
lease on its rows and what it read of them.

A task takes a lease (token + expiry, LEASE) on the rows no live lease holds; a
row already indexed at its version is left untouched (not even leased), or
released untouched when it became current while leased. What it read (the
Document / Removal of index_documents) travels in an IndexClaim to the write
and finish steps, which are in memory.services.indexing.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from memory.models import IndexState
from memory.services.index_documents import (
    KIND_MESSAGE,
    KINDS,
    Document,
    Removal,
    desired,
    model_for,
)
from memory.services.index_failures import IndexReport
from memory.services.index_queue import exchange_roots, messages_skip
from memory.stores.compiled import CompiledRead, ids_in

# Longer than a task takes; a lease that runs out only costs a repeated (still correct) write.
LEASE = timedelta(seconds=60)


def _claim(kind: str, row_ids: Sequence[int], token: str) -> None:
    now = timezone.now()
    free = Q(index_lease_until__isnull=True) | Q(index_lease_until__lt=now)
    model_for(kind).all_objects.filter(pk__in=list(row_ids)).filter(free).exclude(
        index_state=IndexState.SKIPPED
    ).update(index_lease_token=token, index_lease_until=now + LEASE)


def claim_release(kind: str, row_ids: Sequence[int], token: str) -> None:
    model_for(kind).all_objects.filter(pk__in=list(row_ids), index_lease_token=token).update(
        index_lease_token="", index_lease_until=None
    )


@dataclass
class IndexClaim:
    """What one task holds between its steps: the rows it leased, as it read them."""

    kind: str
    token: str
    report: IndexReport
    documents: list[Document] = field(default_factory=list)
    removals: list[Removal] = field(default_factory=list)
    vectors: list[list[float]] | None = None
    embedder: str = ""  # the embedder that made ``vectors``
    # A failure was recorded on the rows: the task has nothing more to do.
    ended: bool = False
    # The rows whose points this task upserted (what its fence kept).
    written: set[int] = field(default_factory=set)

    @property
    def items(self) -> list[Document | Removal]:
        return [*self.documents, *self.removals]


# What index_claim reads of a row to tell whether its point is current.
_STATE_FIELDS = ("id", "version", "indexed_version", "index_state")


def _current(version: int, indexed_version: int, state: str) -> bool:
    """The row's point is the one of its version: nothing to write."""
    return state == IndexState.INDEXED and indexed_version == version


def _state_read(kind: str) -> CompiledRead:
    return CompiledRead(
        lambda _now: model_for(kind).all_objects.filter(pk__in=ids_in()).values_list(*_STATE_FIELDS)
    )


_STATE_READS = {kind: _state_read(kind) for kind in KINDS}


def index_claim(kind: str, row_ids: Sequence[int], *, force: bool = False) -> IndexClaim:
    """Claim: lease the rows no live lease holds and read what their points must be.

    Rows already indexed at their version are left untouched (not even leased), unless
    ``force``; a row that became current while leased is released untouched.
    """
    report = IndexReport()
    ids = list(dict.fromkeys(int(i) for i in row_ids))
    model = model_for(kind)
    rows: list[tuple] = []  # (id, version, indexed_version, index_state) of ``ids``
    if kind == KIND_MESSAGE:
        roots, skipped, existing = exchange_roots(ids)
        report.skipped = messages_skip(skipped)
        report.gone = len(set(ids) - (roots | skipped | existing))
        ids = sorted(roots)
        if ids and not force:
            rows = _STATE_READS[kind].rows(ids=ids)
    else:
        rows = _STATE_READS[kind].rows(ids=ids)
        existing = {rid for rid, *_ in rows}
        report.gone = len(set(ids) - existing)
        ids = [i for i in ids if i in existing]
    if not force:
        # Rows already indexed at their version need no lease: the write that changes one
        # next bumps its version and sends its own task (the sweep backs that up).
        settled = {rid for rid, *state in rows if _current(*state)}
        report.current = len(settled)
        ids = [i for i in ids if i not in settled]
    token = uuid.uuid4().hex
    claim = IndexClaim(kind=kind, token=token, report=report)
    if not ids:
        return claim
    _claim(kind, ids, token)
    mine = model.all_objects.filter(pk__in=ids, index_lease_token=token)
    claimed = list(mine.values_list(*_STATE_FIELDS))
    report.busy = (
        len(ids) - len(claimed) - (len(ids) - model.all_objects.filter(pk__in=ids).count())
    )
    todo = [rid for rid, *state in claimed if force or not _current(*state)]
    report.current += len(claimed) - len(todo)
    claim_release(kind, [rid for rid, *_ in claimed if rid not in set(todo)], token)
    claim.documents, claim.removals, _ = desired(kind, todo)
    return claim
