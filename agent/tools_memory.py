"""How the memory__search, search_text, index, store_fact, delete_fact and recent tools run.

Each handler is a thin adapter from validated input (checked against its schema in
agent.tools.TOOLS before it runs) to a memory service or selector; what it returns
becomes the JSON text of the tool_result block.
"""

from __future__ import annotations

import hashlib

from django.utils.text import slugify

from agent.tool_kit import ToolContext, relative_time
from memory.exceptions import MemoryServiceError
from memory.models import Actor, FactSource, MemoryType

# --- Shaping results -------------------------------------------------------------------


def _hit(hit) -> dict:
    return {
        "id": hit.id,
        "kind": hit.kind,
        "score": round(float(hit.score), 3),
        "type": hit.type,
        "channel": hit.channel,
        "when": relative_time(hit.date),
        "date": hit.date.isoformat() if hit.date else None,
        **({"key": hit.key} if hit.key else {}),
        "text": hit.excerpt,
    }


def _fact(fact) -> dict:
    return {
        "key": fact.key,
        "value": fact.value,
        "type": fact.memory_type,
        "importance": fact.importance,
        "subjects": list(fact.subjects or []),
        "channel": fact.channel,
        "updated": relative_time(fact.updated_at),
        "expires_at": fact.expires_at.isoformat() if fact.expires_at else None,
    }


# --- The tools -----------------------------------------------------------------------------


def _filters(tool_input: dict):
    """The search filters of a tool call (memory.services.search.search_filters_build)."""
    from agent.tools import FILTER_PARAMS
    from memory.services.search import search_filters_build

    return search_filters_build(**{k: tool_input[k] for k in FILTER_PARAMS if k in tool_input})


BLANK_QUERY_MESSAGE = "query : le texte cherché est vide (que des espaces)."


def search_run(tool_input: dict, context: ToolContext) -> dict:
    return _search(tool_input, context, mode="semantic", limit=5, own_kind="exchange")


def search_text_run(tool_input: dict, context: ToolContext) -> dict:
    return _search(tool_input, context, mode="text", limit=10, own_kind="message")


def _search(
    tool_input: dict, context: ToolContext, *, mode: str, limit: int, own_kind: str
) -> dict:
    """memory_search in ``mode`` (``limit`` unless the call gives one), without the
    messages being answered (hits of ``own_kind``: the LLM has them already); the
    facts returned count an access."""
    from memory.services.fact_access import facts_accessed
    from memory.services.search import memory_search

    if not tool_input["query"].strip():
        raise MemoryServiceError(BLANK_QUERY_MESSAGE)
    hits = memory_search(
        query=tool_input["query"],
        mode=mode,
        limit=tool_input.get("limit", limit),
        filters=_filters(tool_input),
    )
    hits = [h for h in hits if not (h.kind == own_kind and int(h.id) in context.message_ids)]
    facts_accessed(int(h.id) for h in hits if h.kind == "fact")
    return {"query": tool_input["query"], "results": [_hit(h) for h in hits]}


def index_key(text: str) -> str:
    """A stable key for a manually indexed text: its first words and a short hash."""
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    words = slugify(" ".join(text.split()[:6])).replace("-", "_")[:60].strip("_")
    return f"note_{words}_{digest}" if words else f"note_{digest}"


def index_run(tool_input: dict, context: ToolContext) -> dict:
    from memory.services.dedup import fact_remember

    text = tool_input["text"].strip()
    result = fact_remember(
        key=index_key(text),
        value=text,
        memory_type=MemoryType.FACT,
        source=FactSource.TOOL,
        channel=context.channel,
        source_message_id=context.message_ids[-1] if context.message_ids else None,
        actor=context.actor,
        explicit=True,  # written by the agent's call, not extracted: created / edited
    )
    return {"indexed": True, "action": result.action, "key": result.fact.key}


def store_fact_run(tool_input: dict, context: ToolContext) -> dict:
    from memory.services.dedup import fact_remember
    from memory.services.fact_ownership import kept_fields_stated, owner_kept_answer

    result = fact_remember(
        key=tool_input["key"],
        value=tool_input["value"],
        memory_type=tool_input.get("type"),  # unstated: a stored fact keeps its type (QA)
        importance=tool_input.get("importance"),
        subjects=tool_input.get("subjects") or [],
        ttl=tool_input.get("ttl") or None,
        source=FactSource.CONVERSATION,
        channel=context.channel,
        source_message_id=context.message_ids[-1] if context.message_ids else None,
        actor=context.actor,
        explicit=True,  # written by the agent's call, not extracted: created / edited
    )
    answer = {"action": result.action, "fact": _fact(result.fact)}
    given = {"memory_type": tool_input.get("type"), "importance": tool_input.get("importance")}
    stated = kept_fields_stated(given)
    return {**answer, **owner_kept_answer(result.fact, tool_input["value"], stated)}


def delete_fact_run(tool_input: dict, context: ToolContext) -> dict:
    from memory.services.fact_keys import fact_named
    from memory.services.facts import fact_forget

    # To the agent, a forgotten key is a key never stored; a key in other letters, the
    # fact its statements fold onto.
    fact = fact_named(tool_input["key"], Actor.AGENT)
    fact_forget(fact=fact, actor=context.actor, note=tool_input.get("reason", ""))
    # Its words stay out of the answer: the next request carries this result.
    return {"deleted": True, "key": fact.key}


def recent_run(tool_input: dict, context: ToolContext) -> dict:
    from memory.selectors import facts_recent

    facts = facts_recent(limit=tool_input.get("limit", 10))
    return {"facts": [_fact(f) for f in facts]}
