"""The digest of the observed rooms: when it runs, what it reads, what it clears.

At fixed hours (settings.DIGEST_HOURS, in TIME_ZONE: 2, 6, 10, 14, 18 and 22 h
by default) a durable job (memory.services.jobs, kind "digest") reads the
messages of the observed rooms the digest has not read yet, has the LLM
extract the durable facts (agent.digest), stores them through the usual dedup
path and marks the messages it read digested in the same transaction, batch
by batch. Marking a message digested is a change of its row: the indexing
machine turns the version bump into the removal of its `live` point. T1 keeps
the message.

``digest_schedule_check`` runs every minute (beat) and once when `serve`
starts: when the last scheduled hour passed without a digest (the service was
stopped, or just started), it enqueues one: the catch-up. A digest can also be
forced (`manage.py memory_digest`, /memory, POST /api/memory/digest).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from memory.models import Digest, DigestState, DigestTrigger, Job, JobKind, JobState, Message
from memory.services.indexing import KIND_MESSAGE, rows_changed

DIGEST_JOB = JobKind.DIGEST
# Messages read by one LLM call; each batch is stored and marked in its own transaction.
DIGEST_BATCH = 40
NO_LLM_NOTE = (
    "Aucun LLM n'est configuré (ANTHROPIC_API_KEY absente) : le digest attend, "
    "rien n'a été retiré de la mémoire live."
)
DIGEST_NOTE = "Digest des salons observés : messages {ids} ({rooms})."
DIGEST_INTERRUPTED_NOTE = (
    "Ce digest a été interrompu (service arrêté ou planté) ; le suivant a repris "
    "les messages qu'il n'avait pas marqués digérés."
)


def _tz() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def _slot(day: date, hour: int, tz: ZoneInfo) -> datetime:
    # An hour that does not exist on a spring-forward night (2 h in Paris) maps to
    # the instant an hour later; one that happens twice counts its first time.
    return datetime.combine(day, time(hour), tzinfo=tz)


def digest_slot_last(now: datetime | None = None) -> datetime:
    """The last fixed digest hour at or before ``now``."""
    now = now or timezone.now()
    tz = _tz()
    today = now.astimezone(tz).date()
    for day in (today, today - timedelta(days=1)):
        for hour in sorted(settings.DIGEST_HOURS, reverse=True):
            slot = _slot(day, hour, tz)
            if slot <= now:
                return slot
    raise AssertionError("DIGEST_HOURS is never empty")  # settings refuse an empty list


def digest_slot_next(now: datetime | None = None) -> datetime:
    """The next fixed digest hour after ``now``."""
    now = now or timezone.now()
    tz = _tz()
    today = now.astimezone(tz).date()
    for day in (today, today + timedelta(days=1)):
        for hour in sorted(settings.DIGEST_HOURS):
            slot = _slot(day, hour, tz)
            if slot > now:
                return slot
    raise AssertionError("DIGEST_HOURS is never empty")


def _open_job() -> Job | None:
    return (
        Job.objects.filter(kind=DIGEST_JOB, state__in=(JobState.QUEUED, JobState.RUNNING))
        .order_by("id")
        .first()
    )


@transaction.atomic
def digest_schedule_check(*, now: datetime | None = None) -> Job | None:
    """Enqueue the digest of the last fixed hour if none ran since it (the catch-up too).

    Idempotent: one job per fixed hour (its key), none while a digest is queued
    or running (without an LLM that one waits: hours do not pile up jobs).
    """
    slot = digest_slot_last(now)
    if _open_job() is not None:
        return None
    if Digest.objects.filter(started_at__gte=slot).exclude(state=DigestState.FAILED).exists():
        return None
    from memory.services.jobs import job_enqueue

    return job_enqueue(
        kind=DIGEST_JOB,
        key=f"digest:{slot.isoformat()}",
        payload={"trigger": DigestTrigger.SCHEDULE},
    )


@transaction.atomic
def digest_request(*, send: bool = True) -> Job:
    """Force a digest now (command, /memory, API).

    A digest already queued (waiting for its retry time, or for an LLM) is
    made due now instead of queueing a second one; a running one is left to run.
    ``send=False``: the caller runs the job itself (``job_run``), so a worker of
    the same process does not race it for the claim (see job_enqueue).
    """
    from memory.services.jobs import _send, job_enqueue

    job = _open_job()
    if job is None:
        return job_enqueue(
            kind=DIGEST_JOB,
            key=f"digest:manual:{uuid.uuid4().hex}",
            payload={"trigger": DigestTrigger.MANUAL},
            send=send,
        )
    if job.state == JobState.QUEUED:
        Job.objects.filter(pk=job.pk, state=JobState.QUEUED).update(
            run_after=None, queued_at=timezone.now()
        )
        if send:
            transaction.on_commit(lambda: _send(job.id))
    return job


def live_undigested(*, limit: int | None = None) -> list[Message]:
    """The oldest messages of observed rooms the digest has not read (forgotten ones excluded)."""
    rows = Message.objects.filter(observed=True, digested_at__isnull=True)
    return list(rows.order_by("id")[: limit or DIGEST_BATCH])


def digest_start(*, trigger: str) -> Digest:
    """A new digest row, after closing the rows of dead runs.

    A run starts under the lease of the digest job, and one digest job is open at a time
    (digest_request, digest_schedule_check): a row still running then is a run killed
    (SIGKILL, a power loss: no ``except`` ran) or one whose lease was taken over, which
    writes nothing more. Closed failed, its counts kept, the owner sees it (QA 8b: it stayed
    « en cours » for good, its facts counted in no digest shown).
    """
    for dead in Digest.objects.filter(state=DigestState.RUNNING):
        digest_finish(dead, state=DigestState.FAILED, note=DIGEST_INTERRUPTED_NOTE)
    return Digest.objects.create(trigger=trigger)


def digest_batch_commit(
    *, digest: Digest, message_ids: list[int], store, now: datetime | None = None
) -> tuple[list[int], int]:
    """Store a batch's facts, then mark its messages digested.

    ``store(present_ids) -> int`` stores the facts of the messages still
    present (not forgotten or digested meanwhile), counts each on ``digest`` as it
    is written, and returns how many it stored. It runs outside any transaction: each fact is written in a short
    one of its own (a dedup decision may wait seconds for an LLM, and SQLite's
    write lock, held through it, kept every other writer waiting until it
    failed as busy), each write checking that the batch's messages are all
    still in memory (memory.services.fact_sources.source_present). The messages are
    marked afterwards, in one transaction: whatever fails before leaves them
    undigested (nothing is marked digested without its facts), and the run
    after it stores the same saved answer again, which dedup finds stored.
    Returns (the ids marked digested, the facts stored).
    """
    present = _batch_present(message_ids)
    stored = store(present) if present else 0
    now = now or timezone.now()
    with transaction.atomic():
        present = _batch_present(message_ids)  # a forget after the last fact's write
        Message.objects.filter(pk__in=present).update(digested_at=now)
        # The row changed: the indexing machine removes its live point.
        rows_changed(KIND_MESSAGE, present)
        digest_count(digest, messages=len(present))
    return present, stored


def digest_count(digest: Digest, *, messages: int = 0, facts: int = 0) -> None:
    """Add to the digest's counts (its row and ``digest``)."""
    digest.messages_digested += messages
    digest.facts_stored += facts
    Digest.objects.filter(pk=digest.pk).update(
        messages_digested=digest.messages_digested, facts_stored=digest.facts_stored
    )


def _batch_present(message_ids: list[int]) -> list[int]:
    """The batch's messages still to digest: in memory, observed, not digested."""
    return list(
        Message.objects.filter(pk__in=message_ids, observed=True, digested_at__isnull=True)
        .order_by("id")
        .values_list("id", flat=True)
    )


def digest_finish(digest: Digest, *, state: str, note: str = "") -> Digest:
    from agent.models import LlmUsage, Purpose

    cost = LlmUsage.objects.filter(
        purpose=Purpose.DIGEST, created_at__gte=digest.started_at
    ).aggregate(total=Sum("cost_usd"))["total"]
    digest.state = state
    digest.note = note
    digest.finished_at = timezone.now()
    digest.cost_usd = cost or 0
    digest.save(update_fields=["state", "note", "finished_at", "cost_usd"])
    return digest


def digest_note(messages: list[Message]) -> str:
    """The provenance written on a fact's revision: the messages it came from."""
    ids = ", ".join(f"#{m.id}" for m in messages)
    rooms = ", ".join(sorted({m.channel for m in messages}))
    return DIGEST_NOTE.format(ids=ids, rooms=rooms)


@dataclass
class DigestStatus:
    observed: list[str]
    live_count: int
    last: Digest | None
    next_at: datetime
    open_job: Job | None


def digest_status_get(*, now: datetime | None = None) -> DigestStatus:
    """What /memory and the API show: the observed rooms, live count, last and next digest."""
    from memory.services.channels import channels_observed, live_pending_count

    return DigestStatus(
        observed=channels_observed(),
        live_count=live_pending_count(),
        last=Digest.objects.exclude(state=DigestState.RUNNING).order_by("-started_at").first(),
        next_at=digest_slot_next(now),
        open_job=_open_job(),
    )
