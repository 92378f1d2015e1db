"""The memory__* tools the LLM may call: definitions (JSON Schemas), validation, dispatch.

Each tool is a thin adapter from validated input to a memory service or
selector; its answer is JSON text for the tool_result block. Inputs are checked
against the tool's own schema before anything runs; an invalid input, a domain
error or an unavailable store comes back to the model as an ``is_error`` result
with a French message, never as an exception out of the loop.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core.exceptions import ValidationError

from agent.tool_errors import schema_errors
from agent.tool_kit import (  # ToolContext, ToolOutcome and Tool: the names callers know
    DATE,
    LIMIT,
    QUERY,
    Tool,
    ToolContext,
    ToolOutcome,
    schema,
)
from agent.tools_forget import forget_run
from agent.tools_memory import (
    delete_fact_run,
    index_run,
    recent_run,
    search_run,
    search_text_run,
    store_fact_run,
)
from agent.tools_self import SELF_TOOLS
from memory.api.forgetting import FORGET_ID_FORM, FORGET_ID_MAX_CHARS, FORGET_ID_PATTERN
from memory.exceptions import MemoryServiceError
from memory.models import MemoryType

logger = logging.getLogger(__name__)

MAX_TEXT_CHARS = 4000
MAX_VALUE_CHARS = 1000
MAX_SUBJECTS = 10
KEY_PATTERN = r"^[a-z0-9][a-z0-9_]{0,99}$"
EXCERPT_CHARS = 300
MAX_FORGET_IDS = 2000

UNKNOWN_TOOL_MESSAGE = "Outil inconnu : {name}."
INVALID_INPUT_MESSAGE = "Entrée invalide pour {name} : {detail}"
TOOL_FAILED_MESSAGE = "L'outil {name} a échoué : {detail}"


# The optional filters of both searches; their input names are search_filters_build's.
FILTER_PARAMS: dict[str, dict] = {
    "channel": {
        "type": "string",
        "maxLength": 64,
        "description": "Only memories from this channel (e.g. whatsapp).",
    },
    "memory_type": {
        "type": "string",
        "enum": list(MemoryType.values),
        "description": "Only facts of this type (excludes conversations and summaries).",
    },
    "subjects": {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 50},
        "maxItems": MAX_SUBJECTS,
        "description": "Only facts tagged with at least one of these subjects (lower case).",
    },
    "since": {**DATE, "description": "Only memories dated on or after this day (YYYY-MM-DD)."},
    "until": {**DATE, "description": "Only memories dated before this day (YYYY-MM-DD)."},
}

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="memory__search",
            description=(
                "Recherche sémantique (par le sens) dans toute la mémoire : anciens échanges de "
                "tous les canaux, résumés et faits. Chaque résultat a un id, un score, un type, "
                "un canal et une date relative. À utiliser pour un sujet passé, une conversation "
                "antérieure ou un contexte qui manque."
            ),
            input_schema=schema(
                {
                    "query": {**QUERY, "description": "Ce que tu cherches, en quelques mots."},
                    "limit": {**LIMIT, "default": 5, "description": "Nombre de résultats."},
                    **FILTER_PARAMS,
                },
                ["query"],
            ),
            run=search_run,
        ),
        Tool(
            name="memory__search_text",
            description=(
                "Recherche par mots-clés exacts (plein texte, accents ignorés) dans les messages, "
                "les faits et les résumés : pour un nom rare, un code, une référence précise."
            ),
            input_schema=schema(
                {
                    "query": {**QUERY, "description": "Les mots à trouver (tous)."},
                    "limit": {**LIMIT, "default": 10},
                    **FILTER_PARAMS,
                },
                ["query"],
            ),
            run=search_text_run,
        ),
        Tool(
            name="memory__index",
            description=(
                "Ajoute un texte de référence à la mémoire (collection « knowledge »), pour le "
                "retrouver plus tard par le sens. Usage rare."
            ),
            input_schema=schema(
                {"text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS}},
                ["text"],
            ),
            run=index_run,
        ),
        Tool(
            name="memory__forget",
            description=(
                "Oublie un sujet à la demande du propriétaire : les échanges, faits et résumés "
                "qui PARLENT de ce sujet quittent la mémoire. Il peut annuler depuis la page "
                "Mémoire pendant quelques jours, ensuite c'est définitif. Oublie directement "
                "quand la demande est claire ; si le sujet est ambigu, appelle d'abord avec "
                "dry_run=true, montre-lui ce qui serait pris et n'oublie qu'après son accord, en "
                "renvoyant les ids de cet aperçu (ids) : rien d'autre n'est pris. "
                "La réponse ne donne que des nombres : ne répète, ne liste et ne résume jamais "
                "ce qui a été oublié."
            ),
            input_schema=schema(
                {
                    "topic": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "description": "Le sujet, ex. « Marie » ou « le voyage à Lisbonne ».",
                    },
                    "dry_run": {
                        "type": "boolean",
                        "description": "true : montrer ce qui serait oublié, sans rien changer.",
                    },
                    "ids": {
                        "type": "array",
                        "items": {
                            "type": "string",
                            "pattern": FORGET_ID_PATTERN,
                            "maxLength": FORGET_ID_MAX_CHARS,
                            "description": FORGET_ID_FORM,
                        },
                        "maxItems": MAX_FORGET_IDS,
                        "description": (
                            "Après un dry_run et l'accord du propriétaire : les ids de l'aperçu "
                            "montré (ex. « message:12 »). Seuls ceux-là sont oubliés."
                        ),
                    },
                },
                ["topic"],
            ),
            run=forget_run,
            forgets=True,
        ),
        Tool(
            name="memory__store_fact",
            description=(
                "Retient un fait durable (ou corrige celui de même clé ; les doublons sont "
                "fusionnés). Pour un état temporaire, donne un ttl."
            ),
            input_schema=schema(
                {
                    "key": {
                        "type": "string",
                        "pattern": KEY_PATTERN,
                        "description": (
                            "clé courte en snake_case : minuscules sans accent, chiffres "
                            "et _, 100 caractères au plus, ex. user_city"
                        ),
                    },
                    "value": {"type": "string", "minLength": 1, "maxLength": MAX_VALUE_CHARS},
                    "type": {
                        "type": "string",
                        "enum": list(MemoryType.values),
                        "description": "Absent : fact pour un nouveau fait, inchangé sinon.",
                    },
                    "importance": {"type": "number", "minimum": 0, "maximum": 1},
                    "subjects": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 50},
                        "maxItems": MAX_SUBJECTS,
                    },
                    "ttl": {
                        "type": ["string", "null"],
                        "description": "Durée de vie : « 12h », « 7d », « 30d » ; absent : permanent.",
                    },
                },
                ["key", "value"],
            ),
            run=store_fact_run,
        ),
        Tool(
            name="memory__delete_fact",
            description="Oublie un fait précis, par sa clé (il reste restaurable depuis le tableau de bord).",
            input_schema=schema(
                {
                    "key": {"type": "string", "minLength": 1, "maxLength": 200},
                    "reason": {"type": "string", "maxLength": 500},
                },
                ["key"],
            ),
            run=delete_fact_run,
            forgets=True,
        ),
        Tool(
            name="memory__recent",
            description="Les derniers faits retenus ou modifiés, les plus récents d'abord.",
            input_schema=schema({"limit": {**LIMIT, "default": 10}}, []),
            run=recent_run,
        ),
    )
}


def tool_definitions() -> list[dict]:
    """The tools as the Messages API takes them."""
    return [tool.definition() for tool in TOOLS.values()]


def tool_input_errors(tool: Tool, tool_input: Any) -> str:
    """The schema violations of ``tool_input`` in French (agent.tool_errors), or "" when it
    is valid."""
    return schema_errors(tool.input_schema, tool_input)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def tool_run(*, name: str, tool_input: Any, context: ToolContext) -> ToolOutcome:
    """Validate and run one tool call. Never raises for a bad call: returns an error outcome."""
    tool = TOOLS.get(name)
    if tool is None:
        return ToolOutcome(
            name, {}, _json({"error": UNKNOWN_TOOL_MESSAGE.format(name=name)}), is_error=True
        )
    detail = tool_input_errors(tool, tool_input)
    tool_input = tool_input if isinstance(tool_input, dict) else {"_": tool_input}
    if detail:
        message = INVALID_INPUT_MESSAGE.format(name=name, detail=detail)
        return ToolOutcome(name, tool_input, _json({"error": message}), is_error=True)
    try:
        data = tool.run(tool_input, context)
    except MemoryServiceError as exc:  # a refusal or an unavailable store, in French
        return ToolOutcome(name, tool_input, _json({"error": str(exc)}), is_error=True)
    except ValidationError as exc:  # a model's full_clean
        message = INVALID_INPUT_MESSAGE.format(name=name, detail=" ".join(exc.messages))
        return ToolOutcome(name, tool_input, _json({"error": message}), is_error=True)
    except Exception as exc:  # a bug must not kill the conversation
        logger.exception("tool %s failed", name)
        message = TOOL_FAILED_MESSAGE.format(name=name, detail=type(exc).__name__)
        return ToolOutcome(name, tool_input, _json({"error": message}), is_error=True)
    return ToolOutcome(
        name,
        tool_input,
        _json(data),
        feeds_extraction=tool.feeds_extraction,
        data=data,
    )


# The agent's tools about itself and its goals (agent/tools_self.py).
TOOLS.update({tool.name: tool for tool in SELF_TOOLS})
