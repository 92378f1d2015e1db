"""The agent's tools (jsonschema) and the MCP tools (pydantic) say an argument's mistake
in the same French words: one table (memory.argument_errors), not two that drift apart
(review: MCP said « au moins 1 caractère(s) » where the agent said « 1 caractère »)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from agent.tool_errors import schema_errors
from memory.mcp.server import _french


class _Args(BaseModel):
    importance: float = Field(default=0.5, ge=0, le=1)
    count: int = Field(default=1, gt=0, lt=100)
    reason: str = Field(default="x", min_length=1, max_length=3)
    subjects: list[str] = Field(default_factory=list, min_length=1, max_length=2)
    flag: bool = False


_SCHEMA = {
    "type": "object",
    "properties": {
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100},
        "reason": {"type": "string", "minLength": 1, "maxLength": 3},
        "subjects": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "flag": {"type": "boolean"},
    },
}


def _pydantic_said(arguments: dict) -> str:
    with pytest.raises(ValidationError) as caught:
        _Args(**arguments)
    return _french(caught.value)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"importance": -1}, "importance : doit être au moins 0."),
        ({"importance": 2}, "importance : doit être au plus 1."),
        ({"count": 0}, "count : doit être plus grand que 0."),
        ({"count": 100}, "count : doit être plus petit que 100."),
        ({"reason": ""}, "reason : doit contenir au moins 1 caractère."),
        ({"reason": "abcd"}, "reason : doit contenir au plus 3 caractères."),
        ({"subjects": []}, "subjects : doit contenir au moins 1 élément."),
        ({"subjects": ["a", "b", "c"]}, "subjects : doit contenir au plus 2 éléments."),
        ({"importance": "beaucoup"}, "importance : doit être un nombre."),
        ({"reason": 3}, "reason : doit être un texte."),
        ({"flag": "peut-être"}, "flag : doit être true ou false."),
        ({"subjects": "a"}, "subjects : doit être une liste."),
    ],
)
def test_one_mistake_is_said_alike_by_the_agent_and_by_mcp(arguments, said):
    assert schema_errors(_SCHEMA, arguments) == said
    assert _pydantic_said(arguments) == said
