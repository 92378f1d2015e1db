"""T1 → T2: the indexing state machine. A point never lies about its row.

Every indexable row (exchange root, fact, summary) carries ``version`` and
``indexed_version`` (memory.models.Indexable). The machine, per row:

    change   (any write its point must reflect: index_enqueue / rows_changed)
             version += 1, state pending, attempts 0, queued now; a task is sent on commit
    create   a new exchange root is already pending at version 1 (its defaults, never
             indexed): saved queued (row_created_queued), its task sent on commit
    claim    a task takes a lease (token + expiry) unless another live lease holds
             the row; a row already indexed at its version is released untouched
    write    the row is read at version v; its point is upserted with payload
             version v, or deleted when the row must have none (forgotten,
             expired, excluded): the Document / Removal of index_documents. Just
             before, a fence renews the lease of the rows still ours at v and
             leaves out the others (our lease ran out and the row may be indexed
             at a newer version by now: a write then, and a crash before the
             finish, would leave a point older than its row for good)
    finish   compare-and-set: marked indexed at v only WHERE version = v AND the
             lease is still ours. If that matches no row, the row changed or our
             lease expired and another task took it: our write may be stale, so
             the row is bumped again (version + 1, pending, a new task): the last
             write to a point is always followed by a successful finish of the
             same writer or by another change.
    fail     every failure counts an attempt and backs off (exponential, jitter,
             capped). A store that is down only delays (the row stays pending);
             an invalid embedding or a collection of another embedder (another
             dimension, or the same one from another model: EmbedderMismatch) ends
             ``failed`` at once, an unexpected error after MAX_ATTEMPTS; the error is
             kept for memory_stats, memory_doctor and the admin. Either mismatch
             is detected before any (paid) embedding.
    sweep    re-sends pending rows that are due, not queued recently (a lost broker
             message, a restart) and not leased; never failed rows (reindex or
             `memory_doctor --fix` retry them).

The change, create and sweep steps (and the batches a task fills) are
memory.services.index_queue; the claim is memory.services.index_claims;
write and finish are here, and what a failure leaves on the rows is
memory.services.index_failures.
``index_rows`` runs claim, write and finish in one go; ``index_claim``,
``index_embed`` and ``index_write`` are the same steps apart (a test races two
workers on one row with them).

Point ids are deterministic (uuid5 of kind and row id): a second write
overwrites, never duplicates. An exchange point is keyed by its root (the user
message); its replies share the root's state and are marked with it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.exceptions import DimensionMismatch, EmbeddingInvalid, StoreUnavailable
from memory.models import IndexState
from memory.services.index_claims import LEASE, IndexClaim, claim_release, index_claim
from memory.services.index_documents import (  # re-exported: the names callers know
    FACT_SENTENCE_WORDS,
    INDEXED_ROLES,
    KIND_FACT,
    KIND_MESSAGE,
    KIND_SUMMARY,
    KINDS,
    Document,
    Removal,
    exchange_root_id,
    fact_text,
    model_for,
)
from memory.services.index_failures import IndexReport, index_failure_record
from memory.services.index_queue import (  # the enqueueing side; re-exported likewise
    INDEX_BATCH,
    batch_fill,
    exchange_replies,
    index_enqueue,
    pending_sweep,
    restart_recover,
    row_created_queued,
    row_created_send,
    rows_changed,
)

__all__ = [
    "FACT_SENTENCE_WORDS",
    "INDEXED_ROLES",
    "INDEX_BATCH",
    "KINDS",
    "KIND_FACT",
    "KIND_MESSAGE",
    "KIND_SUMMARY",
    "IndexReport",
    "batch_fill",
    "exchange_root_id",
    "fact_text",
    "index_embed",
    "index_enqueue",
    "index_row",
    "index_rows",
    "index_write",
    "pending_sweep",
    "restart_recover",
    "row_created_queued",
    "row_created_send",
    "rows_changed",
]

logger = logging.getLogger(__name__)

# --- write, finish ----------------------------------------------------------------------


def _embed(documents: list[Document]) -> list[list[float]]:
    """The slow (and, with Voyage, paid) step: the vectors of the documents, in order."""
    from memory.stores.embedders import get_embedder
    from memory.stores.vectors import check_embedder, get_vector_store

    if not documents:
        return []
    store = get_vector_store()
    embedder = get_embedder()
    for collection in {d.collection for d in documents}:
        # Before embedding: after an embedder change, fail without a (paid) call.
        record = store.collection_record(collection)
        if record is None:
            continue
        existing, recorded = record
        if existing != embedder.dimension:
            raise DimensionMismatch(
                f"La collection {collection} a des vecteurs de dimension {existing}, "
                f"l'embedder en produit {embedder.dimension}."
            )
        check_embedder(collection, recorded)  # the same size, maybe not the same model
    return embedder.embed_documents([d.text for d in documents])


def _claim_embed(claim: IndexClaim) -> list[list[float]]:
    """The vectors of the claim's documents, in one batch. A text the embedder cannot
    represent (an invalid vector in its answer) fails its own row only: the batch is
    embedded again one document at a time, the rows whose vectors are fine go on, and
    the others are recorded failed (QA 7b: one zero vector from Voyage failed the 31 rows
    a task had batched beside it, for good)."""
    try:
        return _embed(claim.documents)
    except EmbeddingInvalid:
        if len({d.row_id for d in claim.documents}) < 2:
            raise
    logger.warning("indexing %s: an invalid vector in a batch, embedding apart", claim.kind)
    invalid: dict[int, EmbeddingInvalid] = {}
    embedded: list[tuple[Document, list[float]]] = []
    for document in claim.documents:
        if document.row_id in invalid:
            continue
        try:
            embedded.append((document, _embed([document])[0]))
        except EmbeddingInvalid as exc:
            invalid[document.row_id] = exc
    read = {d.row_id: d.version for d in claim.documents}
    for row_id, exc in invalid.items():
        index_failure_record(claim.kind, [row_id], claim.token, exc, transient=False, versions=read)
    claim.report.failed += len(invalid)
    kept = [(d, v) for d, v in embedded if d.row_id not in invalid]
    claim.documents = [d for d, _ in kept]
    return [v for _, v in kept]


def _remove(removals: list[Removal]) -> None:
    from memory.stores.vectors import get_vector_store

    by_collection: dict[str, list[str]] = {}
    for removal in removals:
        by_collection.setdefault(removal.collection, []).extend([removal.point_id, *removal.also])
    for collection, ids in by_collection.items():
        get_vector_store().delete(collection, ids)


def _upsert(documents: list[Document], vectors: list[list[float]], embedder: str) -> None:
    from memory.stores.vectors import VectorPoint, get_vector_store

    store = get_vector_store()
    points: dict[str, list] = {}
    drops: dict[str, list[str]] = {}
    for document, vector in zip(documents, vectors, strict=True):
        points.setdefault(document.collection, []).append(
            VectorPoint(id=document.point_id, vector=vector, payload=document.payload)
        )
        if document.drops:
            drops.setdefault(document.collection, []).extend(document.drops)
    for collection, ids in drops.items():  # a summary's passages it no longer has
        store.delete(collection, ids)
    for collection, batch in points.items():
        # Creates a missing collection, recorded as ``embedder``'s (both stores).
        store.upsert(collection, batch, embedder=embedder)


def _write(claim: IndexClaim, vectors: list[list[float]]) -> None:
    """Remove and upsert what the fence leaves: one task's writes to Qdrant.

    Vectors made by another embedder than the one in use now (settings changed between
    the task's two halves) are made again: a point is always the current model's, and a
    collection never holds two models' points (the store checks its record)."""
    from memory.stores.vectors import current_embedder

    documents, vectors, removals = _fence(claim, vectors)
    embedder = claim.embedder or current_embedder()
    if documents and embedder != current_embedder():
        vectors, embedder = _embed(documents), current_embedder()
    _remove(removals)
    _upsert(documents, vectors, embedder)
    claim.written |= {d.row_id for d in documents}


def _fence(
    claim: IndexClaim, vectors: list[list[float]]
) -> tuple[list[Document], list[list[float]], list[Removal]]:
    """Just before the writes: the items whose rows still hold our lease at the version we
    read, their lease renewed (the writes that follow are ours alone for another LEASE).

    A task whose lease ran out (a slow embedding) may find the row changed and indexed
    by another task since: its point, written now, would be older than the row says,
    and if the task then died before its finish nothing would ever overwrite it. Those
    rows are left alone here; the finish finds them not ours and changes them again.
    """
    items = {item.row_id: item for item in claim.items}
    model = model_for(claim.kind)
    with transaction.atomic():
        kept = set(_ours_at_version(claim))  # the finish's own condition
        model.all_objects.filter(pk__in=kept, index_lease_token=claim.token).update(
            index_lease_until=timezone.now() + LEASE
        )
    if len(kept) < len(items):
        logger.info(
            "indexing %s: %d rows no longer ours, not written", claim.kind, len(items) - len(kept)
        )
    pairs = [(d, v) for d, v in zip(claim.documents, vectors, strict=True) if d.row_id in kept]
    return (
        [d for d, _ in pairs],
        [v for _, v in pairs],
        [r for r in claim.removals if r.row_id in kept],
    )


def _attempt(claim: IndexClaim, step) -> bool:
    """Run one step of a task; a failure is recorded on its rows (attempts, backoff, error).

    Re-raises StoreUnavailable (transient: the rows stay pending with a backoff).
    """
    kind, token = claim.kind, claim.token
    # Rows, once each: a long summary is several documents (its passages; review).
    item_ids = list(dict.fromkeys(i.row_id for i in claim.items))
    read = {i.row_id: i.version for i in claim.items}
    try:
        step()
        return True
    except StoreUnavailable as exc:
        claim.ended = True
        index_failure_record(kind, item_ids, token, exc, transient=True, versions=read)
        raise
    except (EmbeddingInvalid, DimensionMismatch) as exc:
        index_failure_record(kind, item_ids, token, exc, transient=False, versions=read)
        logger.warning("indexing %s %s failed: %s", kind, item_ids[:10], exc)
    except Exception as exc:  # unexpected: counted and bounded like the others
        index_failure_record(kind, item_ids, token, exc, transient=False, versions=read)
        logger.exception("indexing %s %s failed", kind, item_ids[:10])
    claim.ended = True
    claim.report.failed = len(item_ids)
    return False


def _ours_at_version(claim: IndexClaim) -> list[int]:
    """The claim's rows that still hold its lease token at the version it read. A lease
    that ran out with no other task taking it is still ours (the token stays until
    another claim replaces it). Call it inside the transaction that acts on the answer."""
    items = {item.row_id: item for item in claim.items}
    rows = model_for(claim.kind).all_objects.filter(
        pk__in=list(items), index_lease_token=claim.token
    )
    return [
        row_id
        for row_id, version in rows.values_list("id", "version")
        if version == items[row_id].version
    ]


def _finish_all(claim: IndexClaim) -> IndexReport:
    """Compare-and-set every written row at once: indexed at the version we wrote, if current.

    One IMMEDIATE transaction reads which rows still hold our lease at the
    version we wrote and marks them in one UPDATE; the others may carry a stale
    point (the row changed, or our lease was lost), so they are changed again.
    """
    kind, token, report = claim.kind, claim.token, claim.report
    items = {item.row_id: item for item in claim.items}
    model = model_for(kind)
    with transaction.atomic():
        done_ids = _ours_at_version(claim)
        now = timezone.now()
        model.all_objects.filter(pk__in=done_ids).update(
            index_state=IndexState.INDEXED,
            indexed_version=F("version"),
            indexed_at=now,
            index_error="",
            index_attempts=0,
            index_retry_at=None,
            index_queued_at=None,
            index_lease_token="",
            index_lease_until=None,
        )
        if kind == KIND_MESSAGE and done_ids:
            exchange_replies(done_ids).update(
                index_state=IndexState.INDEXED, indexed_at=now, index_error="", index_attempts=0
            )
        done = set(done_ids)
        stale = [row_id for row_id in items if row_id not in done]
        if stale:
            # Our write may be stale: change the rows again so a fresh task overwrites them.
            claim_release(kind, stale, token)
            rows_changed(kind, stale)
            _points_of_rows_gone(kind, [i for i in stale if i in claim.written])
    for row_id, item in items.items():
        if row_id not in done:
            report.stale += 1
        elif isinstance(item, Document):
            report.indexed += 1
        else:
            report.removed += 1
    claim.ended = True
    return report


def _points_of_rows_gone(kind: str, written: list[int]) -> None:
    """The points this task wrote for rows deleted since its fence (an erasure, a purge
    committed in between: QA): nothing acts on a row that is gone, so their removal is
    the deletion's own durable job (removal.remove_deleted_points), collections rewritten."""
    gone = set(written) - set(
        model_for(kind).all_objects.filter(pk__in=written).values_list("id", flat=True)
    )
    if not gone:
        return
    from memory.services.removal import remove_deleted_points

    ids = sorted(gone)
    remove_deleted_points(
        ids if kind == KIND_MESSAGE else [],
        ids if kind == KIND_FACT else [],
        ids if kind == KIND_SUMMARY else [],
    )


def _removals_first(claim: IndexClaim) -> None:
    """Write and finish a claim's removals on their own, before its embedding: a point that
    must go (a forget, an erasure) never waits for an embedder that fails, nor stays
    because the embedder in use is refused by the collection (EmbedderMismatch)."""
    if claim.ended or not (claim.removals and claim.documents):
        return
    part = IndexClaim(
        kind=claim.kind, token=claim.token, report=claim.report, removals=claim.removals
    )
    claim.removals = []
    try:
        if _attempt(part, lambda: _write(part, [])):
            _finish_all(part)
    except StoreUnavailable as exc:  # Qdrant down: the documents wait too
        claim.ended = True
        index_failure_record(
            claim.kind,
            list(dict.fromkeys(d.row_id for d in claim.documents)),
            claim.token,
            exc,
            transient=True,
        )
        raise


def index_embed(claim: IndexClaim) -> bool:
    """A task's first half, on its own (two workers racing, in tests): embed what it read
    (its removals are written first, on their own)."""
    _removals_first(claim)
    if claim.ended or not claim.documents:
        return not claim.ended

    def step() -> None:
        from memory.stores.vectors import current_embedder

        claim.embedder = current_embedder()
        claim.vectors = _claim_embed(claim)

    return _attempt(claim, step)


def index_write(claim: IndexClaim) -> IndexReport:
    """A task's second half: write (or remove) the points it embedded, then finish."""
    if claim.ended or not claim.items:
        return claim.report

    def step() -> None:
        _write(claim, claim.vectors or [])

    if _attempt(claim, step):
        _finish_all(claim)
    return claim.report


def index_rows(kind: str, row_ids: Sequence[int], *, force: bool = False) -> IndexReport:
    """Run the machine on these rows (one kind) with one embedding batch: claim, write, finish.

    Raises StoreUnavailable (transient: the rows stay pending with a backoff).
    Other failures are recorded on the rows, not raised. ``force`` re-writes
    rows already indexed at their version (reindex after a dropped collection).
    """
    claim = index_claim(kind, row_ids, force=force)
    _removals_first(claim)
    if claim.items and _attempt(claim, lambda: _write(claim, _claim_embed(claim))):
        _finish_all(claim)
    return claim.report


def index_row(kind: str, row_id: int) -> IndexReport:
    """Index one row (what the Celery tasks call). Quiet when the row is gone."""
    return index_rows(kind, [row_id])
