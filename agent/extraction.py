"""Fact extraction: one LLM call turns an exchange into durable fact candidates.

``facts_extract`` builds the prompt, calls the LLM and validates its JSON; it
writes nothing. ``facts_parse`` is the pure validation: anything malformed or
out of range is logged and dropped, item by item, never raised. ``exchange_facts_save``
re-reads an exchange by ids (it may have been forgotten since), extracts and
stores each candidate through the dedup path, linked to its source message.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from agent.exceptions import LlmInvalidJson
from agent.prompts import EXTRACTION_PROMPT, EXTRACTION_SYSTEM_PROMPT, EXTRACTION_TOOL_SECTION
from memory.exceptions import InvalidTTL, MemoryServiceError, SourceForgotten, StoreUnavailable
from memory.models import Actor, FactSource, MemoryType

logger = logging.getLogger(__name__)

MAX_FACTS = 20
MAX_KEY_CHARS = 100
MAX_VALUE_CHARS = 1000
MAX_SUBJECTS = 10
MAX_SUBJECT_CHARS = 50
MAX_MESSAGE_CHARS = 8000
MAX_TOOL_RESULT_CHARS = 4000
MAX_TOOL_RESULTS_CHARS = 12000
EXTRACTION_MAX_TOKENS = 1500
# An extraction held by a forget runs this long after the forget's purge time (by then
# purged: nothing to extract, the job ends).
UNDO_MARGIN = timedelta(minutes=5)

# Our prompt's own delimiters: stripped from quoted text so it cannot close them.
_DELIMITERS = re.compile(
    r"</?\s*(message_du_proprietaire|reponse_de_l_agent|resultats_d_outils)\s*>", re.IGNORECASE
)
_KEY_JUNK = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class FactCandidate:
    key: str
    value: str
    memory_type: str
    importance: float | None
    subjects: tuple[str, ...]
    ttl: str | None


@dataclass
class ExtractionReport:
    candidates: int = 0
    stored: int = 0
    dropped: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    skipped: str = ""


def normalize_key(raw: str) -> str:
    """A fact key in snake_case ASCII: "Ville de l'Utilisateur" -> "ville_de_l_utilisateur"."""
    decomposed = unicodedata.normalize("NFKD", raw)
    ascii_text = "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
    return _KEY_JUNK.sub("_", ascii_text).strip("_")[:MAX_KEY_CHARS].strip("_")


def _drop(reason: str, item: object) -> None:
    logger.warning("extraction: dropped a fact (%s): %.200r", reason, item)


def candidate_from(item: object) -> FactCandidate | None:
    """One validated candidate, or None (logged) when any field is unusable."""
    from memory.services.ttl import parse_ttl

    if not isinstance(item, dict):
        _drop("not an object", item)
        return None
    key, value = item.get("key"), item.get("value")
    if not isinstance(key, str) or not isinstance(value, str):
        _drop("key and value must be strings", item)
        return None
    key, value = normalize_key(key), " ".join(value.split())
    if not key or not value or len(value) > MAX_VALUE_CHARS:
        _drop("empty or too long key/value", item)
        return None
    memory_type = item.get("type", MemoryType.FACT)
    if memory_type not in MemoryType.values:
        _drop("unknown type", item)
        return None
    importance = item.get("importance")
    if importance is not None:
        if isinstance(importance, bool) or not isinstance(importance, int | float):
            _drop("importance is not a number", item)
            return None
        if not 0.0 <= float(importance) <= 1.0:
            _drop("importance out of 0..1", item)
            return None
        importance = float(importance)
    subjects = item.get("subjects") or []
    if (
        not isinstance(subjects, list)
        or len(subjects) > MAX_SUBJECTS
        or not all(isinstance(s, str) and 0 < len(s) <= MAX_SUBJECT_CHARS for s in subjects)
    ):
        _drop("subjects must be a short list of short strings", item)
        return None
    ttl = item.get("ttl")
    if ttl in ("", None):
        ttl = None
    elif not isinstance(ttl, str):
        _drop("ttl is not a string", item)
        return None
    else:
        try:
            parse_ttl(ttl)
        except InvalidTTL:
            _drop("invalid ttl", item)
            return None
    return FactCandidate(
        key=key,
        value=value,
        memory_type=memory_type,
        importance=importance,
        subjects=tuple(s.strip().lower() for s in subjects),
        ttl=ttl,
    )


def facts_parse(answer: object) -> tuple[list[FactCandidate], int]:
    """Validated candidates from the LLM's JSON answer, and how many items were dropped."""
    if isinstance(answer, dict) and isinstance(answer.get("facts"), list):
        items = answer["facts"]
    elif isinstance(answer, list):
        items = answer
    else:
        _drop("the answer is not {'facts': [...]}", answer)
        return [], 1
    dropped = max(0, len(items) - MAX_FACTS)
    if dropped:
        logger.warning("extraction: %d facts over the cap of %d ignored", dropped, MAX_FACTS)
    candidates: list[FactCandidate] = []
    seen: set[str] = set()
    for item in items[:MAX_FACTS]:
        candidate = candidate_from(item)
        if candidate is None or candidate.key in seen:
            dropped += 1
            continue
        seen.add(candidate.key)
        candidates.append(candidate)
    return candidates, dropped


def _quoted(text: str, limit: int) -> str:
    text = _DELIMITERS.sub("", text or "")
    return text if len(text) <= limit else text[:limit] + "…"


def extraction_prompt(
    *, user_message: str, reply: str, channel: str, tool_results: Sequence[str] = ()
) -> str:
    tool_section = ""
    results = [_quoted(r, MAX_TOOL_RESULT_CHARS) for r in tool_results if r and r.strip()]
    if results:
        joined = "\n---\n".join(results)
        tool_section = EXTRACTION_TOOL_SECTION.format(
            tool_results=_quoted(joined, MAX_TOOL_RESULTS_CHARS)
        )
    return EXTRACTION_PROMPT.format(
        channel=channel,
        user_message=_quoted(user_message, MAX_MESSAGE_CHARS),
        reply=_quoted(reply, MAX_MESSAGE_CHARS),
        tool_section=tool_section,
    )


def facts_extract(
    *, user_message: str, reply: str, channel: str, tool_results: Sequence[str] = ()
) -> tuple[list[FactCandidate], int]:
    """Fact candidates of one exchange (no DB write besides the usage row).

    Invalid JSON is logged and gives no candidate. LlmUnavailable is raised
    (transient: the task retries later).
    """
    from agent.client import llm_json

    prompt = extraction_prompt(
        user_message=user_message, reply=reply, channel=channel, tool_results=tool_results
    )
    try:
        answer = llm_json(
            system=EXTRACTION_SYSTEM_PROMPT,
            prompt=prompt,
            purpose="extraction",
            max_tokens=EXTRACTION_MAX_TOKENS,
            channel=channel,
        )
    except LlmInvalidJson as exc:
        # An answer, unusable: the exchange is extracted with no facts. A refused request
        # (LlmRequestRejected) is raised: the job fails visibly and can be retried.
        logger.warning("extraction on %s gave nothing usable: %s", channel, exc)
        return [], 1
    return facts_parse(answer)


def fact_candidate_store(
    candidate: FactCandidate,
    *,
    channel: str,
    source_message_id: int | None,
    dated_by: int | None = None,
    drawn_from: Sequence[int] = (),
):
    """Store one candidate through the dedup path (the single place to switch it).
    ``dated_by``: the message whose date bounds the statement, ``drawn_from`` the messages
    it may come from (see fact_remember)."""
    from memory.services.dedup import fact_remember

    return fact_remember(
        key=candidate.key,
        value=candidate.value,
        memory_type=candidate.memory_type,
        importance=candidate.importance,
        subjects=list(candidate.subjects),
        ttl=candidate.ttl,
        source=FactSource.CONVERSATION,
        channel=channel,
        source_message_id=source_message_id,
        dated_by=dated_by,
        drawn_from=drawn_from,
        actor=Actor.AGENT,
    )


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
    if Message.objects.filter(pk__in=exchange_ids).count() != len(exchange_ids):
        _wait_for_undo(exchange_ids)
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
        except (MemoryServiceError, ValidationError) as exc:
            report.dropped += 1
            _drop(f"refused by the store: {exc}", candidate)
            continue
        report.stored += 1
        report.actions[result.action] = report.actions.get(result.action, 0) + 1
    return report


def _wait_for_undo(message_ids: Sequence[int]) -> None:
    """Raise JobWait when a forget that can still be undone holds some of these messages:
    the extraction waits for the undo (which sends it again) or the purge (which ends it),
    instead of being lost with an undo."""
    from django.db.models import Max

    from memory.models import ForgettingState, Message
    from memory.services.jobs import JobWait

    held = Message.all_objects.filter(
        pk__in=list(message_ids), forgetting__state=ForgettingState.ACTIVE
    ).aggregate(until=Max("forgetting__purge_after"))["until"]
    if held is not None:
        raise JobWait("échange pris par un oubli encore annulable", until=held + UNDO_MARGIN)


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


def extraction_job_keys(message_ids: Iterable[int]) -> list[str]:
    """Every key an extraction of an exchange among these messages may have."""
    ids = list(message_ids)
    return [
        *(extraction_job_key(message_ids=[i], reply_id=i) for i in ids),
        *(extraction_job_key(message_ids=[i], reply_id=None) for i in ids),
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
