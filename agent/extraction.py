"""Fact extraction: one LLM call turns an exchange into durable fact candidates.

``facts_extract`` builds the prompt, calls the LLM and validates its JSON; it
writes nothing. ``facts_parse`` is the pure validation: anything malformed or
out of range is logged and dropped, item by item, never raised. ``fact_candidate_store``
stores one candidate through the dedup path; saving an exchange's facts, as a durable
job, is agent.extraction_jobs.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent.exceptions import LlmInvalidJson
from agent.prompts import EXTRACTION_PROMPT, EXTRACTION_SYSTEM_PROMPT, EXTRACTION_TOOL_SECTION
from memory.exceptions import InvalidTTL
from memory.models import Actor, FactSource, MemoryType
from memory.models.rules import fact_key_extracted

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

# Our prompt's own delimiters: stripped from quoted text so it cannot close them.
_DELIMITERS = re.compile(
    r"</?\s*(message_du_proprietaire|reponse_de_l_agent|resultats_d_outils)\s*>", re.IGNORECASE
)


@dataclass(frozen=True)
class FactCandidate:
    key: str
    value: str
    memory_type: str | None  # None: not stated (a new fact is a « fact », a stored one keeps its)
    importance: float | None
    subjects: tuple[str, ...]
    ttl: str | None


def normalize_key(raw: str) -> str:
    """A fact key in snake_case, folded as the agent's keys fold (rules.fact_key_extracted):
    "Ville de l'Utilisateur" -> "ville_de_l_utilisateur", "Taux %" -> "taux_%"."""
    return fact_key_extracted(raw)[:MAX_KEY_CHARS].strip("_")


def log_dropped_fact(reason: str, item: object) -> None:
    logger.warning("extraction: dropped a fact (%s): %.200r", reason, item)


def candidate_from(item: object) -> FactCandidate | None:
    """One validated candidate, or None (logged) when any field is unusable."""
    from memory.services.ttl import parse_ttl

    if not isinstance(item, dict):
        log_dropped_fact("not an object", item)
        return None
    key, value = item.get("key"), item.get("value")
    if not isinstance(key, str) or not isinstance(value, str):
        log_dropped_fact("key and value must be strings", item)
        return None
    key, value = normalize_key(key), " ".join(value.split())
    if not key or not value or len(value) > MAX_VALUE_CHARS:
        log_dropped_fact("empty or too long key/value", item)
        return None
    memory_type = item.get("type")
    if memory_type is not None and memory_type not in MemoryType.values:
        log_dropped_fact("unknown type", item)
        return None
    importance = item.get("importance")
    if importance is not None:
        if isinstance(importance, bool) or not isinstance(importance, int | float):
            log_dropped_fact("importance is not a number", item)
            return None
        if not 0.0 <= float(importance) <= 1.0:
            log_dropped_fact("importance out of 0..1", item)
            return None
        importance = float(importance)
    subjects = item.get("subjects") or []
    if (
        not isinstance(subjects, list)
        or len(subjects) > MAX_SUBJECTS
        or not all(isinstance(s, str) and 0 < len(s) <= MAX_SUBJECT_CHARS for s in subjects)
    ):
        log_dropped_fact("subjects must be a short list of short strings", item)
        return None
    ttl = item.get("ttl")
    if ttl in ("", None):
        ttl = None
    elif not isinstance(ttl, str):
        log_dropped_fact("ttl is not a string", item)
        return None
    else:
        try:
            parse_ttl(ttl)
        except InvalidTTL:
            log_dropped_fact("invalid ttl", item)
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
        log_dropped_fact("the answer is not {'facts': [...]}", answer)
        return [], 1
    dropped = max(0, len(items) - MAX_FACTS)
    if dropped:
        logger.warning("extraction: %d facts over the cap of %d ignored", dropped, MAX_FACTS)
    candidates: list[FactCandidate] = []
    seen: set[str] = set()
    for item in items[:MAX_FACTS]:
        candidate = candidate_from(item)
        if candidate is not None and candidate.key in seen:
            # Keys that look alike are one key (QA: « User_City », « user-city » and
            # « ＵＳＥＲ_ＣＩＴＹ » in one answer: the last two left no trace).
            log_dropped_fact(f"key {candidate.key!r} already given in this answer", item)
            candidate = None
        if candidate is None:
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
