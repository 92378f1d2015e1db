"""The agent's tools about itself and its goals: memory__search_self, store_self, delete_self,
memory__search_goals, store_goal, delete_goal. Registered in agent.tools.TOOLS.

Thin adapters to memory.services.self_memory; same contract as the other tools
(schemas checked first, refusals as French ``is_error`` results).
"""

from __future__ import annotations

from agent.tool_kit import LIMIT, QUERY, Tool, ToolContext, relative_time, schema
from memory.models import FactKind, GoalCategory, SelfCategory
from memory.services.self_memory import REASON_MAX_CHARS, STORE_ACTION_MESSAGES

_REASON = {
    "type": "string",
    "minLength": 1,
    "maxLength": REASON_MAX_CHARS,
    "description": "Pourquoi (ex. « objectif atteint », « ce n'est plus vrai »).",
}
_ID = {"type": "integer", "minimum": 1, "description": "L'id donné par une recherche."}
_CONTENT = {
    "type": "string",
    "minLength": 1,
    "maxLength": 1000,
    "description": "Une phrase autonome, à la première personne.",
}
HOW_MESSAGES = {
    "semantic": "",
    "words": "Trouvé par mots communs.",
    "important": "Rien de proche : voici les principaux.",
}


def _item(item, score=None) -> dict:
    data = {
        "id": item.pk,
        "category": item.category,
        "category_label": item.category_label.lower(),
        "content": item.value,
        "updated": relative_time(item.updated_at),
    }
    if score is not None:
        data["score"] = score
    return data


def _search(kind: str):
    def run(tool_input: dict, context: ToolContext) -> dict:
        from memory.services.self_memory_reads import agent_item_recall

        hits, how = agent_item_recall(
            kind=kind,
            query=tool_input["query"],
            category=tool_input.get("category"),
            limit=tool_input.get("limit", 5),
        )
        data = {"query": tool_input["query"], "results": [_item(h.item, h.score) for h in hits]}
        if HOW_MESSAGES[how] and hits:
            data["note"] = HOW_MESSAGES[how]
        return data

    return run


def _store(kind: str):
    def run(tool_input: dict, context: ToolContext) -> dict:
        from memory.services.self_memory import agent_item_store

        result = agent_item_store(
            kind=kind,
            category=tool_input["category"],
            content=tool_input["content"],
            actor=context.actor,
            channel=context.channel,
            source_message_id=context.message_ids[-1] if context.message_ids else None,
        )
        return {
            "action": result.action,
            "message": STORE_ACTION_MESSAGES[result.action],
            "item": _item(result.item),
        }

    return run


def _delete(kind: str):
    def run(tool_input: dict, context: ToolContext) -> dict:
        from memory.services.self_memory import ALREADY_DELETED_MESSAGE, agent_item_forget

        item, deleted = agent_item_forget(
            kind=kind, item_id=tool_input["id"], reason=tool_input["reason"], actor=context.actor
        )
        if not deleted:
            return {"deleted": False, "id": item.pk, "message": ALREADY_DELETED_MESSAGE}
        return {"deleted": True, "id": item.pk}  # its words stay out of the next request

    return run


SELF_TOOLS = (
    Tool(
        name="memory__search_self",
        description=(
            "Cherche ce que tu sais de toi-même : ton contexte, tes capacités, tes limites, tes "
            "préférences, tes relations. Pour « tu es qui ? », « tu sais faire quoi ? ». Chaque "
            "résultat a un id (pour memory__delete_self)."
        ),
        input_schema=schema(
            {
                "query": {**QUERY, "description": "Ce que tu cherches sur toi."},
                "category": {"type": "string", "enum": list(SelfCategory.values)},
                "limit": {**LIMIT, "default": 5},
            },
            ["query"],
        ),
        run=_search(FactKind.SELF),
    ),
    Tool(
        name="memory__store_self",
        description=(
            "Retiens une découverte sur toi-même (« Je peux lire le Lobby », « Mickael m'a "
            "créé »). Une chose déjà connue n'est pas enregistrée deux fois ; une capacité "
            "nouvelle remplace la limite contraire."
        ),
        input_schema=schema(
            {
                "content": _CONTENT,
                "category": {"type": "string", "enum": list(SelfCategory.values)},
            },
            ["content", "category"],
        ),
        run=_store(FactKind.SELF),
    ),
    Tool(
        name="memory__delete_self",
        description="Supprime une chose sur toi devenue fausse, par son id, avec la raison.",
        input_schema=schema({"id": _ID, "reason": _REASON}, ["id", "reason"]),
        run=_delete(FactKind.SELF),
        forgets=True,
    ),
    Tool(
        name="memory__search_goals",
        description=(
            "Cherche tes objectifs et envies (« tu aimerais apprendre quoi ? »). Chaque résultat "
            "a un id (pour memory__delete_goal)."
        ),
        input_schema=schema(
            {
                "query": {**QUERY, "description": "Ce que tu cherches dans tes objectifs."},
                "limit": {**LIMIT, "default": 5},
            },
            ["query"],
        ),
        run=_search(FactKind.GOAL),
    ),
    Tool(
        name="memory__store_goal",
        description=(
            "Retiens un objectif ou une envie à toi : une capacité souhaitée "
            "(capability_request), quelque chose à comprendre (understanding), un lien "
            "(connection)."
        ),
        input_schema=schema(
            {
                "content": _CONTENT,
                "category": {"type": "string", "enum": list(GoalCategory.values)},
            },
            ["content", "category"],
        ),
        run=_store(FactKind.GOAL),
    ),
    Tool(
        name="memory__delete_goal",
        description="Supprime un objectif atteint ou abandonné, par son id, avec la raison.",
        input_schema=schema({"id": _ID, "reason": _REASON}, ["id", "reason"]),
        run=_delete(FactKind.GOAL),
        forgets=True,
    ),
)
