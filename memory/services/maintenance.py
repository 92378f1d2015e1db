"""Rebuilding and checking T2 against T1: what `reindex` and `memory_doctor` do."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.db import DatabaseError, transaction

from memory.exceptions import StoreUnavailable
from memory.models import Fact, Message, Summary
from memory.services.index_documents import desired
from memory.services.indexing import (
    INDEXED_ROLES,
    KIND_FACT,
    KIND_MESSAGE,
    KIND_SUMMARY,
    IndexReport,
    index_rows,
    rows_changed,
)

# Below this many points outside the search index, an exact scan costs ~1 ms.
SEARCH_INDEX_MIN_UNINDEXED = 5_000
# While serving, the index is only built after this long without a search or a write:
# the build holds the whole process (Qdrant Edge's binding keeps the GIL) for seconds.
SEARCH_INDEX_QUIET_S = 600.0
# Rows re-queued per UPDATE before a collection is dropped (as an import does).
REQUEUE_BATCH = 500

REINDEX_INTERRUPTED_MESSAGE = (
    "Réindexation interrompue ({error}). Les lignes pas encore réindexées restent en attente : "
    "le service les reprend dès que le stockage répond, ou relancez "
    "`python manage.py reindex`."
)

# A message row has its point in conversations (an exchange) or in live (observed room).
COLLECTION_KINDS = {
    "conversations": (KIND_MESSAGE,),
    "knowledge": (KIND_FACT, KIND_SUMMARY),
    "live": (KIND_MESSAGE,),
}

logger = logging.getLogger(__name__)


def collections_for(choice: str) -> list[str]:
    return list(COLLECTION_KINDS) if choice == "all" else [choice]


def source_ids(kind: str, collection: str | None = None) -> list[int]:
    """The rows of T1 that make the points of a kind (exchange roots, facts, summaries).

    For messages, ``collection`` keeps the rows of one collection: the observed
    ones for live, the others for conversations.
    """
    if kind == KIND_MESSAGE:
        rows = Message.all_objects.filter(reply_to__isnull=True, role__in=INDEXED_ROLES)
        if collection == "live":
            rows = rows.filter(observed=True)
        elif collection == "conversations":
            rows = rows.exclude(observed=True)
    elif kind == KIND_FACT:
        rows = Fact.all_objects.all()
    else:
        rows = Summary.all_objects.all()
    return list(rows.order_by("id").values_list("id", flat=True))


def _batches(ids: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def reindex(
    *,
    collection: str = "all",
    batch_size: int = 64,
    recreate: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, IndexReport]:
    """Rebuild Qdrant from SQLite through the functions the tasks use.

    Idempotent (deterministic point ids): interrupting it and running it again
    is safe. ``recreate`` drops the collections first (an embedder change), their
    rows marked pending before: an interrupted rebuild leaves them to the sweep.
    """
    from memory.stores.vectors import get_vector_store

    store = get_vector_store()
    reports: dict[str, IndexReport] = {}
    for name in collections_for(collection):
        if recreate:
            _requeue_and_drop(store, name)
        for kind in COLLECTION_KINDS[name]:
            ids = source_ids(kind, name)
            report = IndexReport()
            done = 0
            for batch in _batches(ids, batch_size):
                # A rebuild rewrites every point, even those current at their version.
                try:
                    part = index_rows(kind, batch, force=True)
                except StoreUnavailable as exc:
                    # The rows of this batch stay pending (backoff), those not reached keep
                    # their state: pending after a drop, so the sweep brings them back.
                    raise StoreUnavailable(REINDEX_INTERRUPTED_MESSAGE.format(error=exc)) from exc
                for attr in vars(report):
                    setattr(report, attr, getattr(report, attr) + getattr(part, attr))
                done += len(batch)
                if progress:
                    progress(kind, done, len(ids))
            if kind in reports:  # messages: conversations, then live
                for attr in vars(report):
                    setattr(report, attr, getattr(report, attr) + getattr(reports[kind], attr))
            reports[kind] = report
    # Rewritten points sit outside the search index until it is rebuilt.
    store.optimize()
    from memory.stores.sqlite import planner_statistics_refresh

    planner_statistics_refresh()
    return reports


def _requeue_and_drop(store, name: str) -> None:
    """Drop a collection, its rows first marked pending (the indexing machine's change step).

    Without it, a rebuild interrupted after the drop (the embedder down, a kill)
    would leave rows marked indexed over an empty collection, which the sweep
    (pending rows only) never re-sends: their points lost for good. The rows are
    marked pending and committed before the drop, so whatever stops the rebuild from
    then on leaves them pending (QA: the drop ran inside that transaction, and a kill
    during it rolled the requeue back: every row « indexed », no point). That first
    requeue sends no task; a task already in flight may still index a row into the
    collection being dropped: every row is marked pending once more after the drop, its
    tasks sent then.
    """
    _requeue(name, send=False)  # no task yet: none writes into what is dropped (review)
    store.drop_collection(name)
    _requeue(name)


def _requeue(name: str, *, send: bool = True) -> None:
    """Mark every row of collection ``name`` pending, its version bumped (with ``send``,
    their tasks are sent on commit; else the sweep finds them)."""
    with transaction.atomic():
        for kind in COLLECTION_KINDS[name]:
            for batch in _batches(source_ids(kind, name), REQUEUE_BATCH):
                rows_changed(kind, batch, send=send)


def search_index_maintain(*, quiet_s: float = SEARCH_INDEX_QUIET_S) -> dict[str, int]:
    """Index the points written since the last build (embedded Qdrant), and give what an
    earlier version indexed or created without the int8 copy its copy (a Qdrant server
    builds it in the background), unless the store was searched, read or written in the last
    ``quiet_s`` seconds; {collection: points indexed here}.

    Run at `serve`'s start (quiet_s 0) and by the periodic task, so the index
    follows the collection as it grows and after bulk loads (an import, a
    restore), once the burst of writes and searches is over.

    The keyword indexes are merged first when their segments piled up
    (memory.stores.fts_upkeep.fts_merge; whatever state the vector store is in). A
    merge SQLite refuses (the database locked past the busy timeout, the disk full)
    is left to the next upkeep: it never keeps the vectors' index from being built,
    nor `serve` from starting.
    """
    from memory.stores.fts_upkeep import fts_merge
    from memory.stores.vectors import get_vector_store

    try:
        fts_merge()
    except DatabaseError as exc:
        logger.warning("keyword indexes not merged (next upkeep): %s", exc)
    return get_vector_store().optimize(min_unindexed=SEARCH_INDEX_MIN_UNINDEXED, quiet_s=quiet_s)


@dataclass
class DoctorReport:
    collection: str
    dimension_ok: bool = True
    expected_dimension: int | None = None
    found_dimension: int | None = None
    # The embedder in use, and the one that filled the collection (same size, other model).
    expected_embedder: str = ""
    found_embedder: str | None = None
    missing: list[int] = field(default_factory=list)  # row ids without a point
    orphans: list[str] = field(default_factory=list)  # point ids without a live row
    stale: list[int] = field(default_factory=list)  # row ids whose point has another version
    # Rows whose indexing ended failed: {row id: error}, per kind.
    failed: dict[str, dict[int, str]] = field(default_factory=dict)
    # After a repair: the comparison run again, and whether it found nothing left.
    remaining: DoctorReport | None = None
    fixed: bool = False

    @property
    def embedder_ok(self) -> bool:
        return self.found_embedder in (None, self.expected_embedder)

    @property
    def rebuild_needed(self) -> bool:
        """Its points cannot be compared with the embedder's vectors: only a rebuild helps."""
        return not (self.dimension_ok and self.embedder_ok)

    @property
    def healthy(self) -> bool:
        return not self.rebuild_needed and not (
            self.missing or self.orphans or self.stale or any(self.failed.values())
        )


# Payload fields compared besides the version (a row changed behind the machine's back).
TEXT_FIELDS = ("version", "content", "user_message", "assistant_message")


def _expected(kind: str, collection: str) -> dict[str, tuple[int, dict]]:
    """point id -> (row id, the payload fields that must match) for rows that should have a
    point in ``collection``."""
    documents, _, _ = desired(kind, source_ids(kind, collection))
    return {
        d.point_id: (d.row_id, {k: d.payload[k] for k in TEXT_FIELDS if k in d.payload})
        for d in documents
        if d.collection == collection
    }


def _failed_rows(kind: str, collection: str) -> dict[int, str]:
    from memory.models import IndexState
    from memory.services.index_documents import model_for

    rows = model_for(kind).all_objects.filter(index_state=IndexState.FAILED)
    if kind == KIND_MESSAGE:
        rows = rows.filter(pk__in=source_ids(kind, collection))
    return dict(rows.values_list("id", "index_error")[:100])


def _compare(store, name: str, embedder) -> tuple[DoctorReport, dict[str, list[int]]]:
    """One collection against its rows: the report, and the rows to index to repair it."""
    report = DoctorReport(
        collection=name, expected_dimension=embedder.dimension, expected_embedder=embedder.name
    )
    record = store.collection_record(name)
    report.found_dimension = record[0] if record is not None else None
    report.failed = {kind: _failed_rows(kind, name) for kind in COLLECTION_KINDS[name]}
    to_index: dict[str, list[int]] = {}
    if report.found_dimension is not None and report.found_dimension != embedder.dimension:
        report.dimension_ok = False
        return report, to_index
    report.found_embedder = record[1] if record is not None else None
    if not report.embedder_ok:
        return report, to_index
    expected: dict[str, tuple[str, int, dict]] = {}
    for kind in COLLECTION_KINDS[name]:
        expected |= {pid: (kind, rid, f) for pid, (rid, f) in _expected(kind, name).items()}
    present = set(store.iter_ids(name)) if report.found_dimension is not None else set()
    report.orphans = sorted(present - set(expected))
    for pid, (kind, rid, _) in expected.items():
        if pid not in present:
            report.missing.append(rid)
            to_index.setdefault(kind, []).append(rid)
    for hit in store.retrieve(name, sorted(present & set(expected))):
        kind, rid, fields = expected[hit.id]
        if any(hit.payload.get(k) != v for k, v in fields.items()):
            report.stale.append(rid)
            to_index.setdefault(kind, []).append(rid)
    # A row with several points (a long summary's passages) is counted once (review).
    report.missing = list(dict.fromkeys(report.missing))
    report.stale = list(dict.fromkeys(report.stale))
    to_index = {kind: list(dict.fromkeys(ids)) for kind, ids in to_index.items()}
    return report, to_index


def _repair(store, report: DoctorReport, to_index: dict[str, list[int]]) -> None:
    if report.rebuild_needed:
        reindex(collection=report.collection, recreate=True)
        return
    if report.orphans:
        store.delete(report.collection, report.orphans)
    for kind, rows in report.failed.items():
        to_index.setdefault(kind, []).extend(rows)
    for kind, ids in to_index.items():
        for batch in _batches(sorted(set(ids)), 64):
            index_rows(kind, batch, force=True)


def memory_doctor(*, collection: str = "all", fix: bool = False) -> list[DoctorReport]:
    """Compare SQLite and Qdrant row by row and version by version; ``fix`` repairs.

    A point must exist for every live row, carry the row's current version, and
    no point may exist for a row that is gone, forgotten or excluded. After a
    repair the comparison runs again: ``fixed`` is only set when it finds nothing
    left (a repair whose embeddings failed leaves ``remaining`` to report).
    """
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import get_vector_store

    store = get_vector_store()
    embedder = get_embedder()
    reports = []
    for name in collections_for(collection):
        report, to_index = _compare(store, name, embedder)
        if fix and not report.healthy:
            _repair(store, report, to_index)
            report.remaining, _ = _compare(store, name, embedder)
            report.fixed = report.remaining.healthy
        reports.append(report)
    return reports
