"""Our agent's tool calls checked against their JSON schema, the violations said in French.

The model reads these errors and tries again; the owner may read them in the
conversation's tool results. MCP says the same mistakes in the same words (memory.argument_errors);
the schema validator's own messages are English (« '0.5' is not of type 'number' »).
"""

from __future__ import annotations

import math
from typing import Any

from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.argument_errors import NOT_FINITE, REQUIRED, bound_rule, must_be

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
    said += [f"{field} : {NOT_FINITE}." for field in _not_finite(instance)]
    return " ".join(dict.fromkeys(said))


def _not_finite(value: Any, path: str = "") -> list[str]:
    """The fields of ``value`` holding NaN or an infinity (QA: an importance of NaN passed
    the schema's bounds and reached the database's check, an IntegrityError)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [path or "entrée"]
    if isinstance(value, dict):
        return [
            field
            for name, item in value.items()
            for field in _not_finite(item, f"{path}.{name}" if path else str(name))
        ]
    if isinstance(value, list):
        return [field for item in value for field in _not_finite(item, path)]
    return []


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
    if keyword == "pattern" and error.schema.get("description"):
        # The field's own description says the form (QA: the regex was quoted to the owner).
        return [f"{field} : {_rule(keyword, expected)} ({error.schema['description']})."]
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
