"""Request body parsing with a size cap.

Django enforces DATA_UPLOAD_MAX_MEMORY_SIZE when a view reads request.body or
request.POST, but DRF's JSONParser reads the raw stream and never checks it:
a client could send a body of any size. These parsers refuse it with 413.
"""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.parsers import FormParser, JSONParser

BODY_TOO_LARGE_MESSAGE = "Requête trop volumineuse : {limit} octets au plus."


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


class LimitedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = _read_capped(stream, parser_context)
        return super().parse(io.BytesIO(body), media_type, parser_context)


class LimitedFormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = _read_capped(stream, parser_context)
        return super().parse(io.BytesIO(body), media_type, parser_context)
