"""Validation of the lines of a memory export (memory.services.portability_import reads them).

Every line is checked before anything is written from it: its JSON, stricter
than the json module (``LineDecoder``), its fields and their JSON types here
(``record_check``), then the model's own validators (choices, lengths,
ranges, the key rule: ``model_check``). A failure is an ``ImportLineError``
naming the line, in French.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.error_reasons import (
    DuplicateKey,
    json_error_reason,
    json_int,
    object_without_duplicates,
)
from memory.exceptions import MemoryServiceError
from memory.models import MemorySettings
from memory.services.portability import (
    FACT_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    MESSAGE_FIELDS,
    REVISION_FIELDS,
    SETTINGS_FIELDS,
    SUMMARY_FIELDS,
)
from memory.services.search import DATE_RANGE_MESSAGE, date_in_range

LINE_ERROR = "ligne {line} : {message}"
EMPTY_FILE = "le fichier est vide (un en-tête makilab-memory est attendu)."
BAD_HEADER = f'en-tête attendu : {{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, …}}.'
# The version as the file wrote it, in JSON: the text "1" is no version 1 (QA: « version 1
# non prise en charge (cette version lit la version 1) »).
BAD_VERSION = (
    "version {version} non prise en charge (cette version lit la version {supported}, "
    "un nombre entier)."
)
VERSION_SHOWN_MAX = 40
BAD_JSON = "JSON invalide ({error})."
NOT_OBJECT = "un objet JSON est attendu."
UNKNOWN_TYPE = "type « {type} » inconnu (attendus : {types})."
MISSING_FIELD = "champ « {name} » manquant."
UNKNOWN_FIELDS = "champ(s) inconnu(s) : {names}."
BAD_TYPE = "champ « {name} » : {expected} attendu."
BAD_DATE = "champ « {name} » : date ISO 8601 attendue."
DATE_WITHOUT_OFFSET = (
    "champ « {name} » : la date doit porter son décalage horaire "
    "(ex. 2026-11-30T09:00:00+01:00 ou …Z)."
)
DATE_OUT_OF_RANGE = "champ « {name} » : " + DATE_RANGE_MESSAGE
DUPLICATE_ID = "le message {id} apparaît deux fois dans le fichier."
DUPLICATE_KEY = "le fait « {key} » apparaît deux fois dans le fichier."
DUPLICATE_SETTINGS = "une seule ligne « {type} » par fichier (la première : ligne {first})."
DUPLICATE_CHANNEL = (
    "le canal « {channel} » apparaît deux fois dans le fichier (la première : ligne {first})."
)
UNKNOWN_REF = "champ « {name} » : aucun message {id} sur une ligne précédente."
BAD_SETTING = "réglages invalides, « {name} » : {expected} attendu."
DATE_IN_FUTURE = "champ « {name} » : la date est dans le futur."
DATE_BEFORE = "champ « {name} » : la date précède celle de « {earlier} »."
REVISION_BEFORE_FACT = "champ « created_at » : la date précède celle du fait."
# LineDecoder's refusals (the importer shows them as BAD_JSON).
DUPLICATE_FIELD = "champ « {name} » écrit deux fois"
NOT_A_NUMBER = "{value} n'est pas un nombre JSON"
LONE_SURROGATE = "un texte contient un \\ud800…\\udfff seul, impossible en UTF-8"
TOO_DEEP = "imbrication trop profonde"

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
    "channel": {"channel": (STR, False), "observed": (BOOL, False)},
}
assert set(SPECS["message"]) == {*MESSAGE_FIELDS, "id", "reply_to"}
assert set(SPECS["summary"]) == set(SUMMARY_FIELDS)
assert set(SPECS["fact"]) == {*FACT_FIELDS, "source_message", "revisions"}
# Optional fields of a message line: the messages of observed rooms only.
MESSAGE_OBSERVED_SPEC = {"observed": (BOOL, False), "digested_at": (DATE, True)}
# Optional fields of a fact line: the agent's self and goal items only.
FACT_AGENT_SPEC = {"kind": (STR, False), "category": (STR, False)}
assert set(SPECS["revision"]) == set(REVISION_FIELDS)
RECORD_TYPES = ("settings", "context_notes", "channel", "message", "summary", "fact")
# A settings line may name some knobs only (an export writes them all); each has its
# model field's JSON type: the model would take true for 1 and cut 7.9 to 7.
_FIELD_KINDS = ((models.BooleanField, BOOL), (models.IntegerField, INT), (models.FloatField, FLOAT))
SETTINGS_SPEC: dict[str, str] = {
    name: next(
        kind
        for field_class, kind in _FIELD_KINDS
        if isinstance(MemorySettings._meta.get_field(name), field_class)
    )
    for name in SETTINGS_FIELDS
}


class ImportLineError(MemoryServiceError):
    """A line of the file that cannot be imported; nothing was imported."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(LINE_ERROR.format(line=line, message=message))


class LineDecoder(json.JSONDecoder):
    """``json.loads(text, cls=LineDecoder)``: a line of the file, read strictly.

    The json module takes what is not JSON, or not text: refused here with a
    ValueError, like any invalid JSON, are a field written twice (which value
    would be the memory's?), NaN and Infinity (SQLite refuses them), a float
    too big (1e400 reads as inf), a lone UTF-16 surrogate (``\\ud800``: no
    UTF-8 text holds it) and a nesting deeper than the parser's recursion.
    Every refusal but invalid JSON (a JSONDecodeError: ``json_error_reason``)
    says why in French; int()'s refusal of a number too long included.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("object_pairs_hook", object_without_duplicates)
        kwargs.setdefault("parse_constant", _not_a_number)
        kwargs.setdefault("parse_float", _finite_float)
        kwargs.setdefault("parse_int", json_int)
        super().__init__(**kwargs)

    def decode(self, s, *args, **kwargs):
        try:
            value = super().decode(s, *args, **kwargs)
            # A surrogate comes from an escape only: the line was decoded from UTF-8.
            surrogate = "\\u" in s and holds_lone_surrogate(value)
        except RecursionError:
            raise ValueError(TOO_DEEP) from None
        except DuplicateKey as exc:
            raise ValueError(DUPLICATE_FIELD.format(name=exc.key)) from None
        if surrogate:
            raise ValueError(LONE_SURROGATE)
        return value


def holds_lone_surrogate(value: object) -> bool:
    """Whether a text or a key of a parsed JSON ``value`` holds a lone UTF-16 surrogate
    (``"\\ud800"``: no UTF-8 text holds one; json.loads joins a pair into one character).
    RecursionError for a nesting deeper than the encoder's recursion."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def line_refusal(exc: ValueError, *, line: bool = False) -> str:
    """Why ``LineDecoder`` refused a text, in French (BAD_JSON's reason); ``line``: name
    the line of a text of several lines too."""
    if isinstance(exc, json.JSONDecodeError):  # the json module's text is English
        return json_error_reason(exc, line=line)
    return str(exc)  # LineDecoder's own refusals


def _not_a_number(name: str):
    raise ValueError(NOT_A_NUMBER.format(value=name))


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(NOT_A_NUMBER.format(value=text))
    return value


def _is_kind(value: object, kind: str) -> bool:
    """Whether a JSON value is of a spec's kind (a bool is no int; a float holds a number)."""
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == FLOAT:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        try:
            return math.isfinite(float(value))
        except OverflowError:  # an int of 400 digits
            return False
    if kind == LIST:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, {STR: str, BOOL: bool, DICT: dict}[kind])


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
            values[name] = _date_check(line, value, name, where)
            continue
        if not _is_kind(value, kind):
            raise ImportLineError(line, where + BAD_TYPE.format(name=name, expected=EXPECTED[kind]))
        values[name] = value
    return values


def _date_check(line: int, value: object, name: str, where: str) -> datetime:
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
    except ValueError:  # well formed, but no such moment: 2026-02-30, 25:00, +25:00
        parsed = None
    if parsed is None:
        raise ImportLineError(line, where + BAD_DATE.format(name=name))
    if timezone.is_naive(parsed):
        # Read in this memory's time zone it would be another moment than the one exported
        # (a row forgotten here would not be recognised): a date carries its offset.
        raise ImportLineError(line, where + DATE_WITHOUT_OFFSET.format(name=name))
    # The years the rest of the memory accepts; they also keep the calendar's ends
    # (year 1, year 9999) away from the conversions to UTC and back.
    if not date_in_range(parsed):
        raise ImportLineError(line, where + DATE_OUT_OF_RANGE.format(name=name))
    return parsed


def dates_check(
    line: int,
    values: dict,
    *,
    past: Sequence[str],
    ordered: Sequence[tuple[str, str]] = (),
    where: str = "",
) -> None:
    """No date of ``past`` in the future (past a clock's tolerance, as the API's for a
    message), and each (earlier, later) pair of ``ordered`` in that order, within the same
    tolerance (a message the API dated by a clock a little ahead, digested at once): what
    no history of a memory holds (QA: a message of 2090, a fact updated before it existed)."""
    from memory.services.messages_record import FUTURE_TOLERANCE

    limit = timezone.now() + FUTURE_TOLERANCE
    for name in past:
        if values.get(name) is not None and values[name] > limit:
            raise ImportLineError(line, where + DATE_IN_FUTURE.format(name=name))
    for earlier, later in ordered:
        first, then = values.get(earlier), values.get(later)
        if first is not None and then is not None and then < first - FUTURE_TOLERANCE:
            raise ImportLineError(line, where + DATE_BEFORE.format(name=later, earlier=earlier))


def settings_check(line: int, record: dict) -> None:
    """The JSON types of a settings line's knobs (the importer checks their names, the
    model their ranges)."""
    for name, kind in SETTINGS_SPEC.items():
        if name in record and not _is_kind(record[name], kind):
            raise ImportLineError(line, BAD_SETTING.format(name=name, expected=EXPECTED[kind]))


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
    """The header: this format and version, and its dates, when given, dates an export
    writes (QA: « since » and « exported_at » were never read: any value passed)."""
    if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
        raise ImportLineError(line, BAD_HEADER)
    version = record.get("version")
    # 1.0 and true equal 1 in Python: only the integer 1 is the version an export writes.
    if not _is_kind(version, INT) or version != FORMAT_VERSION:
        shown = json.dumps(version, ensure_ascii=False)
        if len(shown) > VERSION_SHOWN_MAX:
            shown = shown[:VERSION_SHOWN_MAX] + "…"
        raise ImportLineError(line, BAD_VERSION.format(version=shown, supported=FORMAT_VERSION))
    dates = {
        name: _date_check(line, record[name], name, "")
        for name in ("since", "exported_at")
        if record.get(name) is not None
    }
    dates_check(line, dates, past=("since", "exported_at"), ordered=[("since", "exported_at")])
