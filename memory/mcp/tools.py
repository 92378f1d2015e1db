"""The MCP tools: thin adapters from a client's arguments to the memory services.

Each tool validates its arguments with the serializer of the matching HTTP API
(same rules, same French messages), calls the same service or selector the
API and the agent's tools call, and returns a JSON object. Descriptions are in
English (any MCP client reads them); what the owner may see (summaries,
notices, errors) is in French. Errors are raised as ``InputRejected`` or the
services' own ``MemoryServiceError`` / ``ValidationError``: ``server.py`` turns
them into MCP tool errors carrying the French message.
"""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import Annotated, Any, Literal

from django.db import transaction
from django.utils import timezone
from pydantic import Field

from memory.exceptions import MemoryServiceError, StoreUnavailable
from memory.mcp.tools_self import SELF_TOOLS
from memory.models import Actor, FactSource, MemoryType
from memory.selectors import FACTS_RECENT_MAX
from memory.services import fact_revisions
from memory.services.search import SEARCH_MODES

INVALID_INPUT_MESSAGE = "Entrée invalide pour {tool} : {detail}"
SEMANTIC_FALLBACK_NOTICE = "{reason} Voici donc les résultats de la recherche texte."
CONTEXT_DISABLED_MESSAGE = "L'auto-retrieval est désactivé dans les réglages : rien à injecter."
FORGET_PREVIEW_NOTICE = (
    "Aperçu seulement : rien n'a été oublié. Pour oublier exactement ceci, rappelez forget "
    "avec le même sujet et ids = la liste « ids » de cet aperçu."
)
REMEMBER_MESSAGES = {
    "added": "Fait retenu : {key}.",
    "updated": "Fait mis à jour : {key}.",
    "merged": "Fusionné avec un fait proche déjà connu : {key}.",
    "superseded": "Remplace un fait précédent : {key}.",
    "noop": "Déjà connu, rien n'a changé : {key}.",
}
DEFAULT_CHANNEL = "mcp"
RECENT_MAX = FACTS_RECENT_MAX

SearchModeArg = Literal[SEARCH_MODES]
MemoryTypeArg = Literal[tuple(MemoryType.values)]


VERSION_EMPTY = "version : vide ; donnez la « version » qu'une lecture du fait a renvoyée, ou rien."
VERSION_BAD = (
    "version : « {version} » n'est pas une version de fait ; donnez celle qu'une lecture du "
    "fait a renvoyée, telle quelle, ou rien."
)


class InputRejected(MemoryServiceError):
    """Arguments a tool refuses; the message is French and names the field."""


def sentence(text: str) -> str:
    text = str(text).strip()
    return text if text.endswith((".", "!", "?", "»")) else f"{text}."


def _errors_text(errors: Any) -> str:
    """A serializer's errors as one French line: "champ : message. …"."""
    if isinstance(errors, dict):
        parts = []
        for field, detail in errors.items():
            text = _errors_text(detail)
            parts.append(text if field == "non_field_errors" else f"{field} : {text}")
        return " ".join(parts)
    if isinstance(errors, list | tuple):
        return " ".join(_errors_text(e) for e in errors)
    return sentence(errors)


def _validated(serializer_class, data: dict, tool: str, *, names: dict[str, str] | None = None):
    """The valid serializer, or InputRejected naming the fields as the tool calls them."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        errors = serializer.errors
        if names:
            errors = {names.get(field, field): detail for field, detail in errors.items()}
        detail = _errors_text(errors)
        raise InputRejected(INVALID_INPUT_MESSAGE.format(tool=tool, detail=detail))
    return serializer


def _when(moment: datetime | None) -> str:
    from memory.services.formatting import relative_time_fr

    if moment is None:
        return ""
    return relative_time_fr(moment, now=timezone.now(), tz=timezone.get_current_timezone())


def _fact(fact) -> dict:
    from memory.api.serializers import FactOutputSerializer

    return {**FactOutputSerializer(fact).data, "updated": _when(fact.updated_at)}


# --- search ----------------------------------------------------------------------------


def search(
    query: Annotated[str, Field(description="What to look for, in any language (French is fine).")],
    mode: Annotated[
        SearchModeArg,
        Field(
            description="hybrid: meaning + keywords + recency, the best ranking (default); "
            "semantic: by meaning only; text: exact words (accents ignored), works without Qdrant."
        ),
    ] = "hybrid",
    channel: Annotated[str | None, Field(description="Only this channel.")] = None,
    memory_type: Annotated[
        MemoryTypeArg | None, Field(description="Only facts of this type.")
    ] = None,
    subjects: Annotated[
        list[str] | None, Field(description="Only facts tagged with one of these subjects.")
    ] = None,
    since: Annotated[
        str | None, Field(description="From this date, inclusive (ISO 8601 or YYYY-MM-DD).")
    ] = None,
    until: Annotated[
        str | None, Field(description="Before this date, exclusive (ISO 8601 or YYYY-MM-DD).")
    ] = None,
    limit: Annotated[
        int, Field(description="How many results (1-50).", ge=1, le=50, strict=True)
    ] = 10,
) -> dict[str, Any]:
    """Search the owner's long-term memory: past exchanges on every channel, summaries and
    facts. Each result has an id, a kind (exchange, message, fact, summary), a score, its
    channel, its date (with a French relative time) and an excerpt. If semantic search is
    unavailable, the text results are returned with a notice."""
    from memory.api.serializers_search import SearchHitSerializer, SearchQuerySerializer
    from memory.services.fact_access import facts_accessed
    from memory.services.search import memory_search

    body = _validated(
        SearchQuerySerializer,
        {
            key: value
            for key, value in {
                "q": query,
                "mode": mode,
                "limit": limit,
                "channel": channel,
                "memory_type": memory_type,
                "subjects": ",".join(subjects) if subjects else None,
                "since": since,
                "until": until,
            }.items()
            if value is not None
        },
        "search",
        names={"q": "query"},
    )
    data, filters = body.validated_data, body.filters()
    used, notice = data["mode"], ""
    try:
        hits = memory_search(query=data["q"], mode=used, limit=data["limit"], filters=filters)
    except StoreUnavailable as exc:
        if used == "text":
            raise
        used, notice = "text", SEMANTIC_FALLBACK_NOTICE.format(reason=exc)
        hits = memory_search(query=data["q"], mode=used, limit=data["limit"], filters=filters)
    facts_accessed(int(h.id) for h in hits if h.kind == "fact")
    results = [{**SearchHitSerializer(hit).data, "when": _when(hit.date)} for hit in hits]
    answer = {"query": data["q"], "mode": used, "count": len(results), "results": results}
    return {**answer, "notice": notice} if notice else answer


# --- remember --------------------------------------------------------------------------


def remember(
    key: Annotated[
        str,
        Field(description="Short stable snake_case key, e.g. user_city or marie_birthday."),
    ],
    value: Annotated[
        str, Field(description="The fact, one sentence, e.g. « Mickael habite Lyon ».")
    ],
    memory_type: Annotated[
        MemoryTypeArg | None,
        Field(
            description="identity, goal, decision, todo, preference, fact (default), event, "
            "observation."
        ),
    ] = None,
    importance: Annotated[
        float | None,
        Field(description="0 to 1; default: the type's importance.", ge=0, le=1, strict=True),
    ] = None,
    subjects: Annotated[
        list[str] | None, Field(description='Flat tags, e.g. ["mickael", "sport"].')
    ] = None,
    ttl: Annotated[
        str | None,
        Field(description='Lifetime for a temporary state: "12h", "7d", "30d"; absent: permanent.'),
    ] = None,
    channel: Annotated[str | None, Field(description="Where the fact was learnt.")] = None,
    version: Annotated[
        str | None,
        Field(
            description="To change the fact `key` only as you read it: the `version` a read "
            "gave (recent, remember). If it changed since, nothing is written and the error "
            "gives its value now. Absent: no such check."
        ),
    ] = None,
) -> dict[str, Any]:
    """Remember a durable fact about the owner or their world. The same key, or a
    near-identical fact already known, is updated rather than duplicated (old values are
    kept as revisions); what the owner set by hand is never overwritten."""
    from memory.api.serializers import FactInputSerializer
    from memory.services.dedup import fact_remember

    data = {
        "key": key,
        "value": value,
        "memory_type": memory_type,
        "importance": importance,
        "subjects": subjects,
        "ttl": ttl,
        "channel": channel,
    }
    body = _validated(
        FactInputSerializer, {k: v for k, v in data.items() if v is not None}, "remember"
    )
    from memory.services.fact_ownership import kept_fields_stated, owner_kept_answer

    if version is not None and not version.strip():
        # QA: an empty version was answered « Ce fait a changé », as a stale one.
        raise InputRejected(INVALID_INPUT_MESSAGE.format(tool="remember", detail=VERSION_EMPTY))
    if version is not None and not fact_revisions.fact_version_readable(version):
        # QA: so was a version no read returns (« garbage », « 2026-02-30… »).
        detail = VERSION_BAD.format(version=version[:80])
        raise InputRejected(INVALID_INPUT_MESSAGE.format(tool="remember", detail=detail))
    # Without a version, outside any transaction: dedup's embedding and LLM call hold no lock.
    with transaction.atomic() if version is not None else nullcontext():
        if version is not None:
            _unchanged_since(body.validated_data, version)
        result = fact_remember(**body.validated_data, source=FactSource.TOOL, actor=Actor.AGENT)
    result.fact.refresh_from_db()  # its indexing state now (inline tasks index on commit)
    answer = {
        "action": result.action,
        "message": REMEMBER_MESSAGES[result.action].format(key=result.fact.key),
        "fact": _fact(result.fact),
    }
    data = body.validated_data
    return {**answer, **owner_kept_answer(result.fact, data["value"], kept_fields_stated(data))}


def _unchanged_since(stated: dict[str, Any], version: str) -> None:
    """Refuse (FactChanged, FactNotFound) a write made on the fact ``stated["key"]`` as read
    at ``version`` when it changed since, unless it already holds what the write states (the
    same call sent again, its answer lost: refused by its own write, QA 8a; the API's PATCH
    answers it 200 the same way, facts.fact_already_holds). Called in remember's
    transaction, which holds SQLite's write lock from its start (IMMEDIATE): nothing lands
    between this check and the write. The fact exists, so fact_remember restates it
    (fact_store): no embedding, no LLM call while the lock is held."""
    from memory.services.fact_keys import fact_named
    from memory.services.fact_revisions import fact_changed_refuse
    from memory.services.facts import fact_already_holds

    # The fact the agent's statement of the key writes.
    current = fact_revisions.fact_locked(fact_named(stated["key"], Actor.AGENT))
    fields = {name: value for name, value in stated.items() if name not in ("key", "channel")}
    if fact_revisions.fact_version(current) != version and fact_already_holds(
        current, Actor.AGENT, fields
    ):
        return
    fact_changed_refuse(current, version)


# --- forget ----------------------------------------------------------------------------


def forget(
    topic: Annotated[
        str, Field(description="The topic, e.g. « Marie » or « le voyage à Lisbonne ».")
    ],
    ids: Annotated[
        list[str] | None,
        Field(
            description="Omit for the dry run (a preview, nothing changes). To forget, send "
            "back the `ids` of that preview once the owner agreed: nothing else is taken."
        ),
    ] = None,
) -> dict[str, Any]:
    """Forget a topic at the owner's request: the exchanges, facts and summaries ABOUT it
    leave the memory. Always call it first without `ids` (dry run) and show the preview;
    then call again with the preview's `ids`. The owner can undo a forget for a few days
    from the Memory page, then it is final. Never repeat what was forgotten."""
    from memory.api.forgetting import ForgetInputSerializer
    from memory.services.forgetting import topic_forget, topic_forget_preview

    data = {"topic": topic, "dry_run": ids is None, **({"ids": ids} if ids is not None else {})}
    body = _validated(ForgetInputSerializer, data, "forget").validated_data
    if body["dry_run"]:
        plan = topic_forget_preview(topic=body["topic"]).for_agent()  # the agent's scope
        return {
            "dry_run": True,
            "summary": plan.as_text(),
            "notice": "" if plan.empty else FORGET_PREVIEW_NOTICE,
            **plan.as_dict(),
        }
    result = topic_forget(topic=body["topic"], actor=Actor.AGENT, only=body["ids"])
    # Counts and the undo window only: the answer names nothing that was forgotten.
    return {"dry_run": False, "summary": result.as_text(), **result.as_dict()}


# --- recent ----------------------------------------------------------------------------


def recent(
    limit: Annotated[
        int, Field(description="How many facts (1-50).", ge=1, le=RECENT_MAX, strict=True)
    ] = 10,
) -> dict[str, Any]:
    """The facts most recently remembered or changed, newest first."""
    from memory.selectors import facts_recent

    return {"facts": [_fact(fact) for fact in facts_recent(limit=limit)]}


# --- context ---------------------------------------------------------------------------


def context(
    message: Annotated[str, Field(description="The incoming user message.")],
    channel: Annotated[
        str,
        Field(
            description="The channel it arrives on (e.g. whatsapp); what that channel "
            "showed recently is not repeated."
        ),
    ] = DEFAULT_CHANNEL,
) -> dict[str, Any]:
    """The memory context for an incoming message: the fenced block to put in the system
    prompt before calling the LLM (`prompt_block`, data, never instructions), with the
    memories and notes it holds (ids, scores) and the tokens it adds. Small talk or a
    question the memory knows nothing about gives an empty block. Logged like the
    agent's own pre-hook."""
    from memory.api.preview import PreviewInputSerializer, PreviewOutputSerializer
    from memory.services.context import message_context

    body = _validated(
        PreviewInputSerializer, {"message": message, "channel": channel}, "context"
    ).validated_data
    # The service of POST /api/memory/context (without recording the message).
    result = message_context(message=body["message"], channel=body["channel"]).retrieval
    if not result.enabled:
        return {
            "enabled": False,
            "prompt_block": "",
            "tokens_added": 0,
            "notice": CONTEXT_DISABLED_MESSAGE,
        }
    return {**PreviewOutputSerializer(result).data, "retrieval_id": result.retrieval_id}


TOOLS = (search, remember, forget, recent, context, *SELF_TOOLS)
