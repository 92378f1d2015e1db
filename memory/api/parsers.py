"""Request body parsing with a size cap and a depth cap: the DRF default parsers.

Django enforces DATA_UPLOAD_MAX_MEMORY_SIZE when a view reads request.body or
request.POST, but DRF's JSONParser reads the raw stream and never checks it:
a client could send a body of any size. These parsers refuse it with 413.

json.loads recurses once per nesting level: 2 KB of "[" raise RecursionError,
which DRF does not catch (a 500), and a body just under the interpreter's limit
would recurse again in every serializer that walks it. No request of this API
nests deeper than a few levels, so anything past MAX_JSON_DEPTH is a 400.
An object that names a key twice is a 400 too: json.loads would keep the last value
without a word, and which one the client meant is not known.
Every parse error is said in French, with what is wrong and where (line, column):
DRF's own "JSON parse error - ..." quotes the English text of the json module, which
never reaches the client (``memory.error_reasons.json_error_what`` says it in French).
"""

from __future__ import annotations

import codecs
import io
import json
import sys

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.utils.json import strict_constant

from memory.error_reasons import DuplicateKey, json_error_what, object_without_duplicates

BODY_TOO_LARGE_MESSAGE = "Requête trop volumineuse : {limit} octets au plus."
MAX_JSON_DEPTH = 32
JSON_TOO_DEEP_MESSAGE = "Corps JSON trop imbriqué : {limit} niveaux au plus."
JSON_INVALID_AT_MESSAGE = "Corps JSON invalide : {reason} (ligne {line}, colonne {column})."
JSON_INVALID_MESSAGE = "Corps JSON invalide : {reason}."
JSON_NOT_A_NUMBER_REASON = "NaN et Infinity ne sont pas du JSON"
JSON_NUMBER_TOO_LONG_REASON = "un nombre a plus de {digits} chiffres"
JSON_DUPLICATE_KEY_REASON = "le champ « {key} » est donné deux fois"
JSON_BAD_ENCODING_REASON = "le texte n'est pas en {encoding}"
JSON_UNKNOWN_CHARSET_MESSAGE = (
    "Corps JSON illisible : jeu de caractères « {charset} » non pris en charge."
)


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


def _read_capped(stream, parser_context: dict | None) -> bytes:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    request = (parser_context or {}).get("request")
    declared = request.META.get("CONTENT_LENGTH") if request is not None else None
    try:
        if declared and int(declared) > limit:
            raise PayloadTooLarge(BODY_TOO_LARGE_MESSAGE.format(limit=limit))
    except ValueError:
        pass
    # Also read at most limit + 1 bytes, whatever the header said.
    body = stream.read(limit + 1) if stream is not None else b""
    if len(body) > limit:
        raise PayloadTooLarge(BODY_TOO_LARGE_MESSAGE.format(limit=limit))
    return body


def _encoding(parser_context: dict | None) -> str:
    """The charset of the request's Content-Type (utf-8 by default), if it is a text codec."""
    encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
    try:
        codecs.lookup(encoding)
        "".encode(encoding)  # rejects non-text codecs, as DRF's get_encoding does
    except (LookupError, UnicodeError):
        raise ParseError(JSON_UNKNOWN_CHARSET_MESSAGE.format(charset=encoding)) from None
    return encoding


def json_depth_exceeds(data: object, limit: int) -> bool:
    """Whether containers nest more than ``limit`` levels (iterative: no recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class NumberTooLong(Exception):
    """Raised by ``_int_bounded`` (not a ValueError: NaN's handler catches those)."""


def _int_bounded(text: str) -> int:
    """An integer of the body; Python refuses to read one of more digits than its limit
    (a ValueError that said NaN)."""
    limit = sys.get_int_max_str_digits()  # 0: no limit
    if limit and len(text.lstrip("-")) > limit:
        raise NumberTooLong
    return int(text)


def _position(text: str) -> tuple[int, int]:
    """The line and column (from 1) just past ``text``, counted as json counts them."""
    return text.count("\n") + 1, len(text) - text.rfind("\n")


def _invalid_at(reason: str, line: int, column: int) -> str:
    return JSON_INVALID_AT_MESSAGE.format(reason=reason, line=line, column=column)


class LimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = _read_capped(stream, parser_context)
        encoding = _encoding(parser_context)
        too_deep = ParseError(JSON_TOO_DEEP_MESSAGE.format(limit=MAX_JSON_DEPTH))
        try:
            text = body.decode(encoding)
            data = json.loads(
                text,
                parse_constant=strict_constant if self.strict else None,
                object_pairs_hook=object_without_duplicates,
                parse_int=_int_bounded,
            )
        except RecursionError:
            raise too_deep from None
        except DuplicateKey as exc:
            reason = JSON_DUPLICATE_KEY_REASON.format(key=exc.key)
            raise ParseError(JSON_INVALID_MESSAGE.format(reason=reason)) from None
        except NumberTooLong:
            reason = JSON_NUMBER_TOO_LONG_REASON.format(digits=sys.get_int_max_str_digits())
            raise ParseError(JSON_INVALID_MESSAGE.format(reason=reason)) from None
        except json.JSONDecodeError as exc:
            raise ParseError(_invalid_at(json_error_what(exc), exc.lineno, exc.colno)) from None
        except UnicodeDecodeError as exc:
            reason = JSON_BAD_ENCODING_REASON.format(encoding=encoding)
            line, column = _position(body[: exc.start].decode(encoding, errors="replace"))
            raise ParseError(_invalid_at(reason, line, column)) from None
        except ValueError:  # strict_constant: NaN, Infinity, -Infinity
            raise ParseError(JSON_INVALID_MESSAGE.format(reason=JSON_NOT_A_NUMBER_REASON)) from None
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise too_deep
        return data


class LimitedFormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = _read_capped(stream, parser_context)
        return super().parse(io.BytesIO(body), media_type, parser_context)
