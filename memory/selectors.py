"""Reads of the memory, shared by the API, the dashboard, the commands and the agent."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from memory.exceptions import FactNotFound
from memory.models import (
    Fact,
    FactKind,
    MemorySettings,
    Message,
    MessageRole,
    Summary,
    fact_key_composed,
)
from memory.stores.compiled import CompiledRead, int_param, param

FACT_NOT_FOUND_MESSAGE = "Aucun fait avec la clé « {key} »."


def facts_active(*, kind: str = FactKind.OWNER, now: datetime | None = None) -> QuerySet[Fact]:
    """Facts that count: neither forgotten nor expired (at ``now``, default: now). The
    owner's, unless ``kind`` asks for the agent's self or goals (memory.services.self_memory)."""
    now = now or timezone.now()
    return Fact.all_objects.filter(forgetting__isnull=True, kind=kind, forgotten=False).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


# The most facts one read of the recent ones returns (the API and the MCP tool's cap).
FACTS_RECENT_MAX = 50


def facts_recent(*, limit: int = 10) -> QuerySet[Fact]:
    """The active facts most recently remembered or changed, newest first.

    THE recent facts: the agent's memory__recent, the MCP ``recent`` tool and
    GET /api/memory/recent-facts all read them here.
    """
    limit = max(1, min(int(limit), FACTS_RECENT_MAX))
    return facts_active().select_related("source_message").order_by("-updated_at", "-id")[:limit]


def fact_list(
    *,
    search: str = "",
    include_forgotten: bool = False,
    include_expired: bool = False,
    kind: str = FactKind.OWNER,
) -> QuerySet[Fact]:
    """The owner's facts; ``kind`` self / goal: the agent's memories about itself / its goals."""
    facts = Fact.all_objects.filter(forgetting__isnull=True, kind=kind)
    if not include_forgotten:
        facts = facts.filter(forgotten=False)
    if not include_expired:
        facts = facts.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
    if search:
        facts = facts.filter(Q(key__icontains=search) | Q(value__icontains=search))
    return facts.select_related("source_message")


def fact_get(*, key: str, any_kind: bool = False) -> Fact:
    """The owner's fact ``key``; ``any_kind``: also the agent's self and goal items."""
    facts = Fact.all_objects.filter(forgetting__isnull=True) if any_kind else Fact.objects
    # As stored (a key kept from before as typed), else composed as keys are stored now.
    found = sorted(facts.filter(key__in={key, fact_key_composed(key)}), key=lambda f: f.key != key)
    if not found:
        raise FactNotFound(FACT_NOT_FOUND_MESSAGE.format(key=key))
    return found[0]


def card_fact_get(*, key: str, card: object) -> Fact:
    """The owner's fact a page's button acts on: the one its card shows, by the number the
    card posts (``card``), not whatever holds its key now (QA 3: the card of « ville »
    forgotten erased the live « ville » stated since, which had taken the key). A post
    without a number (a script, a page from before it): by key, as it always was."""
    if isinstance(card, str) and card.isascii() and card.isdigit() and len(card) < 19:
        fact = Fact.objects.filter(pk=int(card)).first()
        if fact is None:  # erased, or taken by a topic forget, since the card was shown
            raise FactNotFound(FACT_NOT_FOUND_MESSAGE.format(key=key))
        return fact
    return fact_get(key=key)


def message_written_at(message_id: int) -> datetime | None:
    """When a message was written (None: it is gone), whatever hides it."""
    return Message.all_objects.filter(pk=message_id).values_list("created_at", flat=True).first()


def memory_settings_get() -> MemorySettings:
    return MemorySettings.load()


def channel_conversation(*, channel: str) -> QuerySet[Message]:
    """THE messages of the owner's conversation in ``channel``: what its history, its
    exchanges (what a reply answers, what extraction reads) and its compaction are made of.

    A message an observed room saved (``observed``: other people's words, read by the
    digest from `live`) is never part of it, even once the room is no longer observed
    (QA 8b: they became the owner's exchange, « Propriétaire : … » in a summary, and
    user turns of the history). Forgotten and excluded messages are left out too (the
    default manager).
    """
    # observed is True or null (memory.models.conversation): exclude() keeps the nulls.
    return Message.objects.filter(channel=channel).exclude(observed=True)


def _history(_now, before: bool, limit: int) -> QuerySet[Message]:
    """The channel's last ``limit`` messages the LLM can receive (before ``before``), newest first."""
    messages = (
        channel_conversation(channel=param("channel"))
        .filter(compacted=False)
        .exclude(role=MessageRole.TOOL)
    )
    if before:
        messages = messages.filter(id__lt=int_param("before"))
    return messages.order_by("-id")[:limit]


_HISTORY = CompiledRead(_history)


def channel_history(
    *, channel: str, before_id: int | None = None, limit: int | None = None
) -> list[Message]:
    """The conversation so far as the LLM receives it, oldest first: THE history.

    The channel's last ``limit`` (history_length) messages of its conversation
    (channel_conversation: no observed room's message) before ``before_id``
    that are not compacted (a summary stands for those) nor tool messages,
    starting with a non-assistant message (the Messages API opens with a user
    turn). The agent loop sends exactly these; auto-retrieval counts exactly
    these as already seen by the LLM, so what is not here stays injectable.
    """
    if limit is None:
        limit = memory_settings_get().history_length
    # Read on every message (the agent loop and auto-retrieval): compiled once per shape.
    rows = _HISTORY.instances(
        channel=channel, before=before_id or 0, shape=(before_id is not None, limit)
    )[::-1]
    while rows and rows[0].role == MessageRole.ASSISTANT:
        rows.pop(0)
    return rows


def channel_summaries(*, channel: str) -> QuerySet[Summary]:
    """The channel's compaction summaries, newest first (the first is channel_summary_latest)."""
    return Summary.objects.filter(channel=channel).order_by("-created_at", "-id")


def channel_summary_latest(*, channel: str) -> Summary | None:
    """The channel's last compaction summary: the agent's prompt carries it with the history."""
    return channel_summaries(channel=channel).first()


# --- Stats and retrieval logs (API /stats and /retrievals, the dashboard, memory_stats) ---

VECTORS_UNAVAILABLE = "unavailable"
VECTORS_OK = "ok"


def _index_counts(queryset) -> dict[str, int]:
    from django.db.models import Count

    from memory.models import IndexState

    counts = dict.fromkeys(IndexState.values, 0)
    for row in queryset.order_by().values("index_state").annotate(n=Count("id")):
        counts[row["index_state"]] = row["n"]
    return counts


def vector_counts_get() -> dict[str, object]:
    """Points per Qdrant collection, or status "unavailable" with the reason.

    Never raises: stats must load while Qdrant or its module is missing.
    """
    try:
        from memory.stores.vectors import COLLECTIONS, get_vector_store

        store = get_vector_store()
        collections = {name: store.count(name) for name in COLLECTIONS}
    except Exception as exc:  # ImportError, StoreUnavailable, a client error
        return {
            "status": VECTORS_UNAVAILABLE,
            "error": str(exc) or type(exc).__name__,
            "collections": {"conversations": None, "knowledge": None, "live": None},
        }
    return {"status": VECTORS_OK, "error": "", "collections": collections}


def memory_stats_get(*, include_vectors: bool = True, owner: bool = True) -> dict[str, object]:
    """Counts per tier and indexing state, and when indexing last happened.

    ``include_vectors=False`` skips Qdrant (its "collections" are then null).
    ``owner=False`` (the agent's token): the facts the owner forgot are neither counted
    nor said to exist, as the agent can tell of no forgotten fact.
    """
    from django.db.models import Max

    from memory.models import Fact, MemoryRetrieval, Message, Summary

    now = timezone.now()
    facts = Fact.objects.all() if owner else Fact.objects.filter(forgotten=False)
    expired = Q(expires_at__isnull=False) & Q(expires_at__lte=now)
    active = facts_active()
    last_indexed = [
        model.objects.aggregate(last=Max("indexed_at"))["last"]
        for model in (Fact, Message, Summary)
    ]
    last_indexed = [value for value in last_indexed if value is not None]
    vectors = (
        vector_counts_get()
        if include_vectors
        else {
            "status": "skipped",
            "error": "",
            "collections": {"conversations": None, "knowledge": None, "live": None},
        }
    )
    fact_counts = {
        "total": facts.count(),
        "active": active.count(),
        "forgotten": facts.filter(forgotten=True).count(),
        "expired": facts.filter(expired, forgotten=False).count(),
        # Only active facts belong in Qdrant: their indexing states.
        "index": _index_counts(active),
    }
    if not owner:
        del fact_counts["forgotten"]
    return {
        "facts": fact_counts,
        # The agent's memories about itself and its goals: not facts of the owner, but
        # points of ``knowledge`` too (their active rows are indexed).
        "agent_items": _agent_item_counts(),
        "messages": {
            "total": Message.objects.count(),
            "compacted": Message.objects.filter(compacted=True).count(),
            "index": _index_counts(Message.objects.all()),
        },
        "summaries": {
            "total": Summary.objects.count(),
            "index": _index_counts(Summary.objects.all()),
        },
        "retrievals": {
            "total": MemoryRetrieval.objects.count(),
            "last_at": MemoryRetrieval.objects.aggregate(last=Max("created_at"))["last"],
        },
        "vectors": vectors,
        "last_indexed_at": max(last_indexed) if last_indexed else None,
        "index_failures": index_failures_get(),
        "jobs": job_stats_get(),
    }


def _agent_item_counts() -> dict[str, object]:
    active = Fact.all_objects.none()
    counts: dict[str, object] = {}
    for kind, name in ((FactKind.SELF, "self_items"), (FactKind.GOAL, "goals")):
        rows = facts_active(kind=kind)
        counts[name] = rows.count()
        active = active | rows
    counts["index"] = _index_counts(active)
    return counts


def job_stats_get(*, failed_limit: int = 20) -> dict[str, object]:
    """Durable jobs per state, and the errors of the failed ones (stats, doctor)."""
    from memory.models import Job, JobState

    states = dict.fromkeys(JobState.values, 0)
    for row in Job.objects.order_by().values("state").annotate(n=Count("id")):
        states[row["state"]] = row["n"]
    failed = Job.objects.filter(state=JobState.FAILED).order_by("-id")
    return {"states": states, "failed": list(failed.values("key", "error")[:failed_limit])}


def index_failures_get(*, limit: int = 20) -> list[dict[str, object]]:
    """Rows whose indexing ended failed, with their error (stats, doctor, the admin)."""
    from memory.models import Fact, IndexState, Message, Summary

    failures: list[dict[str, object]] = []
    for kind, model in (("message", Message), ("fact", Fact), ("summary", Summary)):
        rows = model.all_objects.filter(index_state=IndexState.FAILED).order_by("-id")
        for row_id, attempts, error in rows.values_list("id", "index_attempts", "index_error")[
            :limit
        ]:
            failures.append({"kind": kind, "id": row_id, "attempts": attempts, "error": error})
    return failures[:limit]


def retrieval_list(*, channel: str = ""):
    """Auto-retrieval logs, newest first; one channel's when ``channel`` is given."""
    from memory.models import MemoryRetrieval

    retrievals = MemoryRetrieval.objects.order_by("-created_at", "-id")
    if channel:
        retrievals = retrievals.filter(channel=channel)
    return retrievals
