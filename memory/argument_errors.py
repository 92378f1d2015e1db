"""An argument's mistake in the owner's words, whichever validator found it.

The agent's tool calls are checked by jsonschema (agent.tool_errors), the MCP
tools' arguments by pydantic (memory.mcp.server): each reports in English and in
its own vocabulary. Both say the same mistakes with these words, so a tool refused
for a negative importance reads alike on either side. Pure, no Django.
"""

from __future__ import annotations

from typing import Any

REQUIRED = "champ obligatoire"
INVALID = "valeur invalide"
# JSON has no NaN nor infinity, but Python's parser (the Anthropic SDK's) reads them, and
# a schema's bounds let NaN through (every comparison with it is false).
NOT_FINITE = "doit être un nombre fini"

# A JSON type in French (jsonschema's names; the pydantic adapter maps onto them).
TYPE_WORDS = {
    "string": "un texte",
    "number": "un nombre",
    "integer": "un nombre entier",
    "boolean": "true ou false",
    "array": "une liste",
    "object": "un objet JSON",
    "null": "null",
}

# A bound's rule, its expected value in {0}; « {s} » the plural's s when it counts
# (jsonschema's keywords; the pydantic adapter maps onto them).
BOUND_RULES = {
    "minimum": "doit être au moins {0}",
    "maximum": "doit être au plus {0}",
    "exclusiveMinimum": "doit être plus grand que {0}",
    "exclusiveMaximum": "doit être plus petit que {0}",
    "minLength": "doit contenir au moins {0} caractère{s}",
    "maxLength": "doit contenir au plus {0} caractère{s}",
    "minItems": "doit contenir au moins {0} élément{s}",
    "maxItems": "doit contenir au plus {0} élément{s}",
    "pattern": "n'a pas la forme attendue",
}


def must_be(*kinds: str) -> str:
    """« doit être un nombre ou null » for these JSON types."""
    return "doit être " + " ou ".join(TYPE_WORDS.get(kind, kind) for kind in kinds)


def bound_rule(keyword: str, expected: Any) -> str:
    """A bound's French rule (BOUND_RULES' keyword), INVALID for a keyword it does not know."""
    rule = BOUND_RULES.get(keyword)
    if rule is None:
        return INVALID
    if isinstance(expected, float) and expected.is_integer():
        expected = int(expected)  # « au plus 1 », whichever validator read the bound as 1.0
    counted = expected if isinstance(expected, int) and not isinstance(expected, bool) else 0
    return rule.format(expected, s="s" if counted > 1 else "")
