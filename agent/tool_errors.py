"""Our agent's tool calls checked against their JSON schema, the violations said in French.

The model reads these errors and tries again; the owner may read them in the
conversation's tool results. MCP says the same mistakes in French (memory.mcp.server);
the schema validator's own messages are English (« '0.5' is not of type 'number' »).
"""

from __future__ import annotations

from typing import Any

from memory.api.serializers import UNKNOWN_FIELD_MESSAGE

NOT_AN_OBJECT = 'les arguments doivent être un objet JSON ({"nom": valeur, …}).'
_TYPES = {
    "string": "un texte",
    "number": "un nombre",
    "integer": "un nombre entier",
    "boolean": "true ou false",
    "array": "une liste",
    "object": "un objet JSON",
    "null": "null",
}


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
        return [f"{_field(error, name)} : champ obligatoire." for name in missing]
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


# A rule's French words, its expected value in {0}; « {s} » the plural's s when it counts.
_RULES = {
    "minimum": "doit être au moins {0}",
    "maximum": "doit être au plus {0}",
    "exclusiveMinimum": "doit être plus grand que {0}",
    "exclusiveMaximum": "doit être plus petit que {0}",
    "minLength": "doit contenir au moins {0} caractère{s}",
    "maxLength": "doit contenir au plus {0} caractères",
    "minItems": "doit contenir au moins {0} élément{s}",
    "maxItems": "doit contenir au plus {0} éléments",
    "pattern": "n'a pas la forme attendue (expression régulière {0})",
}


def _rule(keyword: str, expected: Any) -> str:
    if keyword == "type":
        kinds = [expected] if isinstance(expected, str) else list(expected)
        return "doit être " + " ou ".join(_TYPES.get(kind, kind) for kind in kinds)
    if keyword == "enum":
        return "doit valoir l'une de ces valeurs : " + ", ".join(str(v) for v in expected)
    if keyword in _RULES:
        plural = "s" if isinstance(expected, int) and expected > 1 else ""
        return _RULES[keyword].format(expected, s=plural)
    return "valeur invalide"
