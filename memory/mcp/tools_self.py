"""The MCP tools about the agent itself and its goals: self_search, self_remember, self_forget.

The same services as the agent's own tools (agent/tools_self.py) and the API's
``kind`` self / goal: what the agent knows about itself (context, capabilities,
limits, preferences, relations) and its goals, kept out of every owner-facing
read. Refusals (an unknown category, an empty text, an unknown id) are the
services' French ``MemoryServiceError``; ``server.py`` turns them into tool errors.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from memory.models import Actor, FactKind, GoalCategory, SelfCategory
from memory.services.self_memory import REASON_MAX_CHARS

AgentKindArg = Literal[FactKind.SELF.value, FactKind.GOAL.value]
SEARCH_MAX = 20
CATEGORIES_TEXT = f"self: {', '.join(SelfCategory.values)}; goal: {', '.join(GoalCategory.values)}"
FOUND_BY = {
    "semantic": "par le sens",
    "words": "par mots communs",
    "important": "rien de proche : les principaux",
}


def _item(item, score: float | None = None) -> dict[str, Any]:
    data = {
        "id": item.pk,
        "kind": item.kind,
        "category": item.category,
        "category_label": item.category_label,
        "content": item.value,
        "updated_at": item.updated_at.isoformat(),
    }
    if score is not None:
        data["score"] = round(score, 4)
    return data


def self_search(
    query: Annotated[
        str, Field(description="What to look for, e.g. « ce que je sais faire ».", min_length=1)
    ],
    kind: Annotated[
        AgentKindArg,
        Field(description="self: what the agent knows about itself; goal: its goals."),
    ] = FactKind.SELF.value,
    category: Annotated[
        str | None, Field(description=f"Only this category ({CATEGORIES_TEXT}).")
    ] = None,
    limit: Annotated[
        int, Field(description="How many (1-20).", ge=1, le=SEARCH_MAX, strict=True)
    ] = 5,
) -> dict[str, Any]:
    """What the agent knows about itself (its context, capabilities, limits, preferences,
    relations) or its goals, closest to the query first: by meaning, else by shared words,
    else the most important ones. Each result has an id (for self_forget)."""
    from memory.services.self_memory_reads import agent_item_recall

    hits, how = agent_item_recall(kind=kind, query=query, category=category, limit=limit)
    return {
        "kind": kind,
        "query": query,
        "found_by": FOUND_BY[how],
        "results": [_item(hit.item, hit.score) for hit in hits],
    }


def self_remember(
    content: Annotated[
        str,
        Field(
            description="One self-contained sentence in the first person, e.g. « Je peux lire "
            "le Lobby ».",
            min_length=1,
        ),
    ],
    category: Annotated[str, Field(description=f"The category ({CATEGORIES_TEXT}).")],
    kind: Annotated[
        AgentKindArg, Field(description="self: about the agent itself; goal: one of its goals.")
    ] = FactKind.SELF.value,
) -> dict[str, Any]:
    """Remember something the agent learnt about itself, or a goal. What is already known is
    not stored twice; a new capability replaces the contrary limit (kept in the history)."""
    from memory.services.self_memory import STORE_ACTION_MESSAGES, agent_item_store

    result = agent_item_store(kind=kind, category=category, content=content, actor=Actor.AGENT)
    return {
        "action": result.action,
        "message": STORE_ACTION_MESSAGES[result.action],
        "item": _item(result.item),
    }


def self_forget(
    id: Annotated[int, Field(description="The id a self_search gave.", ge=1, strict=True)],
    reason: Annotated[
        str,
        Field(
            description="Why, e.g. « objectif atteint », « ce n'est plus vrai ».",
            min_length=1,
            max_length=REASON_MAX_CHARS,
        ),
    ],
    kind: Annotated[AgentKindArg, Field(description="self or goal.")] = FactKind.SELF.value,
) -> dict[str, Any]:
    """Delete what the agent knew about itself, or a goal (reached, or no longer true). The
    owner can still read it in the history of the Memory page."""
    from memory.services.self_memory import ALREADY_DELETED_MESSAGE, agent_item_forget

    item, deleted = agent_item_forget(kind=kind, item_id=id, reason=reason, actor=Actor.AGENT)
    if not deleted:
        return {"deleted": False, "id": item.pk, "message": ALREADY_DELETED_MESSAGE}
    return {"deleted": True, "id": item.pk, "content": item.value}


SELF_TOOLS = (self_search, self_remember, self_forget)
