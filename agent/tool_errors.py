"""Our agent's tool calls checked against their JSON schema, the violations said in French.

The model reads these errors and tries again; the owner may read them in the
conversation's tool results. MCP says the same mistakes in the same words (memory.argument_errors);
the schema validator's own messages are English (« '0.5' is not of type 'number' »).
"""

from __future__ import annotations

from typing import Any

from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.argument_errors import REQUIRED, bound_rule, must_be

NOT_AN_OBJECT = 'les arguments doivent être un objet JSON ({"nom": valeur, …}).'


def schema_errors(schema: dict, instance: Any) -> str:
    """The violations of ``instance`` against ``schema`` as French sentences naming their
    field, "" when it is valid."""
    from jsonschema import Draft202012Validator

    if not isinstance(instance, dict):
        return NOT_AN_OBJECT
    errors = sorted(
        Draft202012Validator(schema).iter_errors(instance), key=lambda e: [str(p) for p in e.path]
    )
    said = [part for error in errors for part in _said(error)]
    return " ".join(dict.fromkeys(said))


def _said(error: Any) -> list[str]:
    """One violation (a jsonschema ValidationError) as French sentences."""
    field = ".".join(str(p) for p in error.path if not isinstance(p, int)) or "entrée"
    keyword, expected = error.validator, error.validator_value
    if keyword == "required":
        missing = [name for name in expected if name not in error.instance]
        return [f"{_field(error, name)} : {REQUIRED}." for name in missing]
    if keyword == "additionalProperties":
        declared = set(error.schema.get("properties", {}))
        return [
            f"{_field(error, name)} : {UNKNOWN_FIELD_MESSAGE}"
            for name in sorted(error.instance)
            if name not in declared
        ]
    return [f"{field} : {_rule(keyword, expected)}."]


def _field(error: Any, name: str) -> str:
    """``name`` under the path of ``error``'s object."""
    return ".".join([*(str(p) for p in error.path if not isinstance(p, int)), name])


def _rule(keyword: str, expected: Any) -> str:
    if keyword == "type":
        return must_be(*([expected] if isinstance(expected, str) else expected))
    if keyword == "enum":
        return "doit valoir l'une de ces valeurs : " + ", ".join(str(v) for v in expected)
    return bound_rule(keyword, expected)
