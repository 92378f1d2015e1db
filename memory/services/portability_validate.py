"""Validation of the lines of a memory export (memory.services.portability_import reads them).

Every line is checked before anything is written from it: its fields and
their JSON types here (``record_check``), then the model's own validators
(choices, lengths, ranges, the key rule: ``model_check``). A failure is an
``ImportLineError`` naming the line, in French.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.exceptions import MemoryServiceError
from memory.services.portability import (
    FACT_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    MESSAGE_FIELDS,
    REVISION_FIELDS,
    SUMMARY_FIELDS,
)

LINE_ERROR = "ligne {line} : {message}"
EMPTY_FILE = "le fichier est vide (un en-tête makilab-memory est attendu)."
BAD_HEADER = f'en-tête attendu : {{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, …}}.'
BAD_VERSION = "version {version} non prise en charge (cette version lit la version {supported})."
BAD_JSON = "JSON invalide ({error})."
NOT_OBJECT = "un objet JSON est attendu."
UNKNOWN_TYPE = "type « {type} » inconnu (attendus : {types})."
MISSING_FIELD = "champ « {name} » manquant."
UNKNOWN_FIELDS = "champ(s) inconnu(s) : {names}."
BAD_TYPE = "champ « {name} » : {expected} attendu."
BAD_DATE = "champ « {name} » : date ISO 8601 attendue."
DUPLICATE_ID = "le message {id} apparaît deux fois dans le fichier."
DUPLICATE_KEY = "le fait « {key} » apparaît deux fois dans le fichier."
UNKNOWN_REF = "champ « {name} » : aucun message {id} sur une ligne précédente."

STR, INT, FLOAT, BOOL, DATE, LIST, DICT = "str", "int", "float", "bool", "date", "list", "dict"
EXPECTED = {
    STR: "un texte",
    INT: "un entier",
    FLOAT: "un nombre",
    BOOL: "true ou false",
    LIST: "une liste de textes",
    DICT: "un objet",
}
# type -> {field: (kind, nullable)}; every field is required (version 1 writes them all).
SPECS: dict[str, dict[str, tuple[str, bool]]] = {
    "message": {
        "id": (INT, False),
        **dict.fromkeys(("channel", "role", "author", "source", "content"), (STR, False)),
        "created_at": (DATE, False),
        "compacted": (BOOL, False),
        "reply_to": (INT, True),
    },
    "summary": {
        "channel": (STR, False),
        "content": (STR, False),
        "message_count": (INT, False),
        "period_start": (DATE, True),
        "period_end": (DATE, True),
        "created_at": (DATE, False),
    },
    "fact": {
        **dict.fromkeys(("key", "value", "memory_type", "source", "channel"), (STR, False)),
        "importance": (FLOAT, False),
        "subjects": (LIST, False),
        "expires_at": (DATE, True),
        "created_at": (DATE, False),
        "updated_at": (DATE, False),
        "last_accessed_at": (DATE, True),
        "access_count": (INT, False),
        "owner_fields": (LIST, False),
        "source_message": (INT, True),
        "revisions": (None, False),
    },
    "revision": {
        **dict.fromkeys(("actor", "reason", "old_value", "new_value", "note"), (STR, False)),
        "changes": (DICT, False),
        "created_at": (DATE, False),
    },
    "context_notes": {"enabled": (BOOL, False), "notes": (LIST, False), "tag": (STR, False)},
}
assert set(SPECS["message"]) == {*MESSAGE_FIELDS, "id", "reply_to"}
assert set(SPECS["summary"]) == set(SUMMARY_FIELDS)
assert set(SPECS["fact"]) == {*FACT_FIELDS, "source_message", "revisions"}
# Optional fields of a message line: the messages of observed rooms only.
MESSAGE_OBSERVED_SPEC = {"observed": (BOOL, False), "digested_at": (DATE, True)}
# Optional fields of a fact line: the agent's self and goal items only.
FACT_AGENT_SPEC = {"kind": (STR, False), "category": (STR, False)}
assert set(SPECS["revision"]) == set(REVISION_FIELDS)
RECORD_TYPES = ("settings", "context_notes", "message", "summary", "fact")


class ImportLineError(MemoryServiceError):
    """A line of the file that cannot be imported; nothing was imported."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(LINE_ERROR.format(line=line, message=message))


def record_check(
    line: int, record: dict, spec: dict[str, tuple[str, bool]], where: str = ""
) -> dict:
    """The record's fields typed as the spec says (dates parsed), or a line error."""
    missing = [name for name in spec if name not in record]
    if missing:
        raise ImportLineError(line, where + MISSING_FIELD.format(name=missing[0]))
    unknown = sorted(set(record) - set(spec) - {"type"})
    if unknown:
        raise ImportLineError(line, where + UNKNOWN_FIELDS.format(names=", ".join(unknown)))
    values = {}
    for name, (kind, nullable) in spec.items():
        value = record[name]
        if kind is None or (value is None and nullable):
            values[name] = value
            continue
        if kind == DATE:
            parsed = parse_datetime(value) if isinstance(value, str) else None
            if parsed is None:
                raise ImportLineError(line, where + BAD_DATE.format(name=name))
            if timezone.is_naive(parsed):
                parsed = timezone.make_aware(parsed)
            values[name] = parsed
            continue
        ok = {
            STR: isinstance(value, str),
            INT: isinstance(value, int) and not isinstance(value, bool),
            FLOAT: isinstance(value, int | float) and not isinstance(value, bool),
            BOOL: isinstance(value, bool),
            LIST: isinstance(value, list) and all(isinstance(v, str) for v in value),
            DICT: isinstance(value, dict),
        }[kind]
        if not ok:
            raise ImportLineError(line, where + BAD_TYPE.format(name=name, expected=EXPECTED[kind]))
        values[name] = value
    return values


def model_check(line: int, instance, exclude: list[str], where: str = "") -> None:
    """The model's own validation (choices, lengths, ranges, the key rule), as a line error."""
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        parts = [
            f"champ « {name} » : {' '.join(messages)}"
            for name, messages in exc.message_dict.items()
        ]
        raise ImportLineError(line, where + " ; ".join(parts)) from None


def header_check(line: int, record: object) -> None:
    if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
        raise ImportLineError(line, BAD_HEADER)
    if record.get("version") != FORMAT_VERSION:
        raise ImportLineError(
            line, BAD_VERSION.format(version=record.get("version"), supported=FORMAT_VERSION)
        )
