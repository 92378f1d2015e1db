"""An exchange's extraction as a durable job: re-read, extracted, stored.

``exchange_facts_save`` re-reads an exchange by ids (it may have been forgotten since),
extracts and stores each candidate through the dedup path, linked to its source message.
``extraction_job_enqueue`` records the durable job of one exchange and ``job_extract``
runs it (memory.services.jobs); the LLM call and its parsing are agent.extraction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from agent.extraction import FactCandidate, fact_candidate_store, facts_extract, log_dropped_fact
from memory.exceptions import (
    FactErased,
    MemoryServiceError,
    SourceForgotten,
    StoreUnavailable,
)

logger = logging.getLogger(__name__)

# An extraction held by a forget runs this long after the forget's purge time (by then
# purged: nothing to extract, the job ends).
UNDO_MARGIN = timedelta(minutes=5)


@dataclass
class ExtractionReport:
    candidates: int = 0
    stored: int = 0
    dropped: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    skipped: str = ""


def exchange_facts_save(
    *,
    message_ids: Sequence[int],
    reply_id: int | None,
    channel: str,
    tool_results: Sequence[str] = (),
    candidates: Sequence[FactCandidate] | None = None,
    on_extracted: Callable[[list[FactCandidate]], None] | None = None,
) -> ExtractionReport:
    """Extract the facts of an exchange (re-read by ids) and store them through dedup.

    ``candidates`` already extracted (a job run again after a crash) are stored
    without asking the LLM again; ``on_extracted`` receives the LLM's candidates
    before anything is stored (the job saves them there).
    """
    from django.core.exceptions import ValidationError

    from agent.client import llm_available
    from memory.models import Message
    from memory.services.forgetting import forget_mark, forgotten_after

    report = ExtractionReport()
    if not llm_available():
        report.skipped = "no LLM"
        return report
    user_messages = list(Message.objects.filter(pk__in=message_ids).order_by("id"))
    if len(user_messages) != len(set(message_ids)):
        _wait_for_undo([*message_ids, *([reply_id] if reply_id else [])])
        # No forget holds them now: an undo that landed since the read gave them back (QA
        # 5: the exchange came back, never extracted).
        user_messages = list(Message.objects.filter(pk__in=message_ids).order_by("id"))
    if not user_messages:
        report.skipped = "messages gone"  # forgotten for good: nothing to extract
        return report
    reply = Message.objects.filter(pk=reply_id).first() if reply_id else None
    exchange_ids = [m.id for m in user_messages] + ([reply.pk] if reply else [])
    extracted = candidates is None
    if extracted:
        if tool_results and _forgotten_since(user_messages[0].created_at):
            # The tools' results (a memory search's hits) may quote what the owner forgot
            # since the exchange: neither the LLM nor the memory reads them again.
            tool_results = ()
        texts = {
            "user_message": "\n\n".join(m.content for m in user_messages),
            "reply": reply.content if reply else "",
            "channel": channel,
        }
        mark = forget_mark() if tool_results else None
        candidates, report.dropped = facts_extract(**texts, tool_results=tool_results)
        if mark is not None and forgotten_after(mark):
            # A forget landed while the LLM read those results: they may quote what it
            # took. Its answer is not used; the exchange alone is asked again.
            candidates, report.dropped = facts_extract(**texts, tool_results=())
    report.candidates = len(candidates)
    # A forget (or an exclusion) may have taken the exchange while the LLM read it:
    # checked before the answer is saved on the job, which would keep its words.
    if not _exchange_present(exchange_ids):
        report.skipped = "messages gone"
        return report
    if extracted and on_extracted is not None:
        on_extracted(candidates)
    for candidate in candidates:
        try:
            result = fact_candidate_store(
                candidate, channel=channel, source_message_id=user_messages[-1].id
            )
        except SourceForgotten:
            # Forgotten while a candidate was decided (a dedup LLM call): nothing more
            # drawn from it is written; the job waits for the undo or ends.
            _wait_for_undo(exchange_ids)
            report.skipped = "messages gone"
            return report
        except StoreUnavailable:
            raise  # an outage delays the job (memory.services.jobs): nothing dropped
        except FactErased:
            # Neither the candidate nor the refusal's text: the owner erased what it says.
            report.dropped += 1
            logger.info("extraction: a statement of a fact the owner erased is not stored")
            continue
        except (MemoryServiceError, ValidationError) as exc:
            report.dropped += 1
            log_dropped_fact(f"refused by the store: {exc}", candidate)
            continue
        report.stored += 1
        report.actions[result.action] = report.actions.get(result.action, 0) + 1
    return report


def _exchange_present(exchange_ids: Sequence[int]) -> bool:
    """Whether every message of the exchange is in memory; JobWait while a forget that can
    still be undone holds one; False when one is gone for good. Read again after the forget
    check: an undo that landed between the two reads gave them back."""
    from memory.models import Message

    def present() -> bool:
        return Message.objects.filter(pk__in=exchange_ids).count() == len(exchange_ids)

    if present():
        return True
    _wait_for_undo(exchange_ids)
    return present()


def _wait_for_undo(message_ids: Sequence[int]) -> None:
    """Raise JobWait when a forget that can still be undone holds some of these messages:
    the extraction waits for the undo (which sends it again) or the purge (which ends it),
    instead of being lost with an undo. The wait knows how to tell it is over: an undo
    committed while the job ran, which sent nothing (the job was running), makes it due at
    once (memory.services.jobs.job_run)."""
    from memory.services.jobs import JobWait

    ids = list(message_ids)
    held = _held_until(ids)
    if held is not None:
        raise JobWait(
            "échange pris par un oubli encore annulable",
            until=held + UNDO_MARGIN,
            held=lambda: _held_until(ids) is not None,
        )


def _held_until(message_ids: list[int]):
    """The purge date of the latest forget that can still be undone holding one of these
    messages, or None."""
    from django.db.models import Max

    from memory.models import ForgettingState, Message

    return Message.all_objects.filter(
        pk__in=message_ids, forgetting__state=ForgettingState.ACTIVE
    ).aggregate(until=Max("forgetting__purge_after"))["until"]


def _forgotten_since(moment) -> bool:
    """Whether anything was forgotten or erased since ``moment``: a topic or a fact erased
    (a Forgetting row), a single fact forgotten (its forgotten_at)."""
    from memory.models import Fact, Forgetting

    return (
        Forgetting.objects.filter(created_at__gte=moment).exists()
        or Fact.all_objects.filter(forgotten=True, forgotten_at__gte=moment).exists()
    )


def extraction_job_key(*, message_ids: Sequence[int], reply_id: int | None) -> str:
    """One extraction per exchange: keyed on its reply, else on its last message."""
    return f"extract:{reply_id}" if reply_id else f"extract:message:{message_ids[-1]}"


def extraction_jobs_reading(message_ids: Iterable[int]) -> list[str]:
    """The keys of the queued extractions whose exchange holds one of these messages: by
    what they read, not by their key (QA 5: the first of two messages answered together,
    given back, sent nothing, the job being keyed on the reply)."""
    from memory.models import Job, JobKind, JobState

    ids = set(message_ids)
    queued = Job.objects.filter(kind=JobKind.EXTRACT, state=JobState.QUEUED)
    return [
        key
        for key, payload in queued.values_list("key", "payload")
        if ids & {*(payload.get("message_ids") or []), payload.get("reply_id")}
    ]


def extraction_job_enqueue(
    *,
    message_ids: Sequence[int],
    reply_id: int | None,
    channel: str,
    tool_results: Sequence[str] = (),
):
    """Record the durable extraction job of one exchange (once per reply), in the caller's transaction."""
    from memory.services.jobs import job_enqueue

    return job_enqueue(
        kind="extract",
        key=extraction_job_key(message_ids=message_ids, reply_id=reply_id),
        payload={
            "message_ids": list(message_ids),
            "reply_id": reply_id,
            "channel": channel,
            "tool_results": list(tool_results),
        },
    )


def job_extract(payload: dict, *, checkpoint: Callable[..., None]) -> dict:
    """The durable job of one exchange's extraction (memory.services.jobs).

    Exactly once: the LLM's candidates are saved on the job before any fact is
    stored, so a run after a crash stores those same candidates (a restatement
    that writes nothing) instead of asking the LLM again, whose new answer
    could differ. Without an LLM it waits (LlmNotConfigured).
    """
    from agent.client import LLM_NOT_CONFIGURED_MESSAGE, llm_available
    from agent.exceptions import LlmNotConfigured

    if not llm_available():
        raise LlmNotConfigured(LLM_NOT_CONFIGURED_MESSAGE)
    saved = payload.get("candidates")
    report = exchange_facts_save(
        message_ids=payload["message_ids"],
        reply_id=payload.get("reply_id"),
        channel=payload["channel"],
        tool_results=payload.get("tool_results") or [],
        candidates=None
        if saved is None
        else [FactCandidate(**{**c, "subjects": tuple(c["subjects"])}) for c in saved],
        on_extracted=lambda found: checkpoint(candidates=[asdict(c) for c in found]),
    )
    return vars(report)
