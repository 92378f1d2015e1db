"""Maintenance operations and their French report: what reindex, memory_doctor,
purge_expired, memory_seed_self and memory_digest do, wherever they run.

A command runs an operation in its own process when it may open the vector
store, or asks the running `serve` (the one owner of the embedded Qdrant
folder) to run it (memory.services.serve_link). Either way the same function
does the work and writes the same lines; in serve a run is a background thread
whose progress the command follows (maintenance_start / maintenance_get).
The seed and the digest store through dedup, whose similarity check needs the
vector store: beside serve, only serve can make it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from memory.exceptions import MemoryServiceError

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]

OPERATIONS = ("reindex", "doctor", "purge-expired", "vector-counts", "seed-self", "digest")
COLLECTION_CHOICES = ("conversations", "knowledge", "live", "all")
MAX_KEPT_RUNS = 20

RUN_BUSY_MESSAGE = "Une opération « {operation} » est déjà en cours dans le service."
RUN_CRASHED_MESSAGE = "L'opération a échoué dans le service : {error}"
REPAIR_FAILED_MESSAGE = (
    "La réparation a échoué : des différences restent (voir ci-dessus). "
    "Corrigez la cause (l'embedder, Qdrant), puis relancez `python manage.py memory_doctor --fix`."
)


class MaintenanceBusy(MemoryServiceError):
    """The same operation is already running in this process."""


@dataclass
class Outcome:
    lines: list[str]
    ok: bool = True
    data: dict | None = None  # JSON-safe figures for a command that formats them itself


def reindex_run(
    *,
    collection: str = "all",
    batch_size: int = 64,
    recreate: bool = False,
    progress: Progress | None = None,
) -> Outcome:
    from memory.services.maintenance import reindex

    reports = reindex(
        collection=collection, batch_size=batch_size, recreate=recreate, progress=progress
    )
    indexed = sum(r.indexed for r in reports.values())
    removed = sum(r.removed for r in reports.values())
    failed = sum(r.failed for r in reports.values())
    return Outcome(
        [f"Réindexation terminée : {indexed} points écrits, {removed} retirés, {failed} en échec."],
        ok=not failed,
    )


def _keyword_indexes_check(*, fix: bool) -> tuple[bool, list[str], bool]:
    """The keyword indexes against their rows (fts_upkeep.fts_broken); ``fix`` rebuilds
    those that disagree. (healthy after it all, the report's lines, a rebuild failed)."""
    from memory.stores.fts_upkeep import fts_broken, fts_rebuild

    broken = fts_broken()
    if not broken:
        return True, ["index des mots-clés : cohérents"], False
    left = broken
    if fix:
        fts_rebuild(broken)
        left = fts_broken()
    lines = []
    for table in broken:
        line = f"index des mots-clés {table} : ne correspond plus à ses lignes"
        if fix:
            line += " → reconstruit" if table not in left else " → la reconstruction a échoué"
        lines.append(line)
    return not left, lines, fix and bool(left)


def doctor_run(
    *, collection: str = "all", fix: bool = False, progress: Progress | None = None
) -> Outcome:
    from memory.selectors import job_stats_get
    from memory.services.jobs import jobs_retry_failed
    from memory.services.maintenance import memory_doctor

    reports = memory_doctor(collection=collection, fix=fix)
    lines = []
    for report in reports:
        if report.rebuild_needed:
            line = (
                f"{report.collection}: {_mismatch(report)} — lancez "
                "`python manage.py reindex --recreate`"
            )
        else:
            line = (
                f"{report.collection}: {len(report.missing)} sans point, "
                f"{len(report.orphans)} points orphelins, {len(report.stale)} périmés"
            )
        failed = sum(len(rows) for rows in report.failed.values())
        if failed:
            line += f", {failed} en échec d'indexation"
        after = report.remaining
        if report.fixed:
            line += " → réparé"
        elif after is not None:
            line += " → réparation incomplète : " + _left(after)
        lines.append(line)
        # After a repair, the errors that are left are the ones worth showing.
        for kind, rows in (after or report).failed.items():
            for row_id, error in list(rows.items())[:5]:
                lines.append(f"  échec {kind} {row_id} : {error}")
    keywords_healthy, keyword_lines, keywords_repair_failed = _keyword_indexes_check(fix=fix)
    lines += keyword_lines
    jobs = job_stats_get()
    for job in jobs["failed"][:5]:
        lines.append(f"tâche de fond en échec {job['key']} : {job['error']}")
    retried = jobs_retry_failed() if fix else 0
    if retried:
        lines.append(f"{retried} tâche(s) de fond en échec relancée(s)")
    # ``fixed`` is the verdict of the comparison run again after the repair.
    healthy = (
        all(r.healthy or r.fixed for r in reports)
        and keywords_healthy
        and (retried or not jobs["failed"])
    )
    repair_failed = keywords_repair_failed or any(
        r.remaining is not None and not r.fixed for r in reports
    )
    if healthy:
        lines.append("Tout est cohérent.")
    elif repair_failed:
        lines.append(REPAIR_FAILED_MESSAGE)
    else:
        lines.append("Des différences restent : relancez avec --fix.")
    return Outcome(lines, ok=healthy, data={"repair_failed": repair_failed})


def _left(report) -> str:
    """What a comparison run after a repair still finds, in French."""
    if report.rebuild_needed:
        return _mismatch(report)
    failed = sum(len(rows) for rows in report.failed.values())
    return (
        f"{len(report.missing)} sans point, {len(report.orphans)} points orphelins, "
        f"{len(report.stale)} périmés, {failed} en échec d'indexation"
    )


def purge_expired_run(*, progress: Progress | None = None) -> Outcome:
    from memory.services.expiry import expired_purge

    return Outcome([f"{expired_purge()} fait(s) expiré(s) purgé(s)."])


def vector_counts_run(*, progress: Progress | None = None) -> Outcome:
    """Points per collection, as memory_stats shows them (never raises)."""
    from memory.selectors import vector_counts_get

    return Outcome([], data=vector_counts_get())


def seed_self_run(*, text: str, progress: Progress | None = None) -> Outcome:
    """Load a seed file's text (memory.services.self_seed): its report, in French."""
    from memory.services.self_seed import seed_report_lines, self_seed

    return Outcome(seed_report_lines(self_seed(text=text)))


def digest_now_run(*, progress: Progress | None = None) -> Outcome:
    """Force the digest and run it here: the job's outcome and the digest's figures,
    which memory_digest says in French."""
    from agent.digest import digest_run_now

    outcome, digest = digest_run_now()
    return Outcome([], data={"outcome": outcome, **digest})


RUNNERS: dict[str, Callable[..., Outcome]] = {
    "reindex": reindex_run,
    "doctor": doctor_run,
    "purge-expired": purge_expired_run,
    "vector-counts": vector_counts_run,
    "seed-self": seed_self_run,
    "digest": digest_now_run,
}


def operation_run(operation: str, options: dict, progress: Progress | None = None) -> Outcome:
    """Run one operation here, in this process."""
    return RUNNERS[operation](progress=progress, **options)


# --- Runs inside serve -------------------------------------------------------------------


@dataclass
class MaintenanceRun:
    operation: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    state: str = "running"  # running | done | failed
    # Each step's latest progress, in order: {kind: [done, total]} (a follower polling
    # now and then may miss a whole step; it replays them all).
    steps: dict[str, list[int]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    ok: bool = True
    error: str = ""
    data: dict | None = None

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "operation": self.operation,
            "state": self.state,
            "steps": [
                {"kind": kind, "done": done, "total": total}
                for kind, (done, total) in list(self.steps.items())
            ],
            "lines": self.lines,
            "ok": self.ok,
            "error": self.error,
            "data": self.data,
        }


_runs: dict[str, MaintenanceRun] = {}
_runs_lock = threading.Lock()


def _execute(run: MaintenanceRun, options: dict) -> None:
    from django.db import connections

    def progress(kind: str, done: int, total: int) -> None:
        run.steps[kind] = [done, total]

    try:
        outcome = operation_run(run.operation, options, progress)
    except MemoryServiceError as exc:
        run.error, run.ok, run.state = str(exc), False, "failed"
    except Exception as exc:  # reported to the waiting command, not lost in a thread
        logger.exception("maintenance run %s (%s) crashed", run.id, run.operation)
        run.error = RUN_CRASHED_MESSAGE.format(error=f"{type(exc).__name__}: {exc}")
        run.ok, run.state = False, "failed"
    else:
        run.lines, run.ok, run.data = outcome.lines, outcome.ok, outcome.data
        run.state = "done"
    finally:
        connections.close_all()  # this thread's database connection


def maintenance_start(*, operation: str, options: dict) -> MaintenanceRun:
    """Start ``operation`` in a background thread of this process (the one store owner).

    One run per operation at a time: two rebuilds side by side would be safe
    (idempotent writes) but twice the work.
    """
    with _runs_lock:
        if any(r.operation == operation and r.state == "running" for r in _runs.values()):
            raise MaintenanceBusy(RUN_BUSY_MESSAGE.format(operation=operation))
        run = MaintenanceRun(operation=operation)
        _runs[run.id] = run
        for old in list(_runs)[:-MAX_KEPT_RUNS]:
            if _runs[old].state != "running":
                del _runs[old]
    threading.Thread(
        target=_execute, args=(run, options), name=f"maintenance-{operation}", daemon=True
    ).start()
    return run


def maintenance_get(run_id: str) -> MaintenanceRun | None:
    return _runs.get(run_id)


def _mismatch(report) -> str:
    """Why a collection's points cannot be compared with the embedder's vectors, in French."""
    if not report.dimension_ok:
        return f"dimension {report.found_dimension} au lieu de {report.expected_dimension}"
    return f"embedder {report.found_embedder} au lieu de {report.expected_embedder}"
