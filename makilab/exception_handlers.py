"""DRF exception handler: domain and Django validation errors become 4xx JSON.

Every error body has a human "message" and, for field errors, "extra" with a
message per field. Nothing reaches the client as a 500 with a traceback; a database
held by another process is a 503 to retry (makilab.database_busy).

``page_not_found`` is the site's handler404: an address under /api/ that matches no
route answers the same JSON shape; every other address keeps the HTML 404 page.

An error body never carries a lone UTF-16 surrogate: JSON lets a client send one
(``"\\ud800"``), an error may echo it (a choice's bad value, an unknown field's name),
and no UTF-8 holds it, so the renderer would fail and the client get a 500. Each is
shown as its code point, « U+D800 », as DRF's text fields name it.
"""

from __future__ import annotations

import math
import re

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.exceptions import ErrorDetail
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler

from makilab.database_busy import DATABASE_BUSY_MESSAGE, RETRY_AFTER_S, database_busy
from memory.exceptions import FactNotFound, MemoryServiceError, StoreUnavailable

VALIDATION_MESSAGE = "Données invalides."
THROTTLED_MESSAGE = "Trop de requêtes : réessayez dans {wait} secondes."
THROTTLED_LATER_MESSAGE = "Trop de requêtes : réessayez plus tard."
API_NOT_FOUND_MESSAGE = "Aucune route de l'API à cette adresse."
# Where machines call: the API and the MCP server answer errors as JSON, pages as HTML.
API_PREFIXES = ("/api/", "/mcp/")
MCP_PATH = "/mcp"
# A str holds a surrogate code point only unpaired: json.loads joins a pair into one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _as_drf(exc: Exception) -> Exception:
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        return exceptions.ValidationError(detail)
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    return exc


def _null_body_said_in_french(fields: dict) -> dict:
    """DRF's serializer answers a body of ``null`` with "No data provided" (code "null"),
    a text its translations lack: say what the APIs say of any body that is not an object.
    A field's own null error sits under the field's name, never here."""
    from memory.api.messages import BODY_NOT_AN_OBJECT  # the API's modules import late

    errors = fields.get(api_settings.NON_FIELD_ERRORS_KEY)
    if not isinstance(errors, list) or not any(getattr(e, "code", "") == "null" for e in errors):
        return fields
    said = [BODY_NOT_AN_OBJECT if getattr(e, "code", "") == "null" else e for e in errors]
    return {**fields, api_settings.NON_FIELD_ERRORS_KEY: said}


def _surrogates_shown(data: object) -> object:
    """``data`` with every lone surrogate, in a text or a key, written « U+D800 »; the very
    same object when it holds none (a ReturnDict keeps its serializer)."""
    if isinstance(data, str):
        shown = _SURROGATE.sub(lambda match: f"U+{ord(match.group()):04X}", data)
        if shown == data:
            return data
        return ErrorDetail(shown, code=data.code) if isinstance(data, ErrorDetail) else shown
    if isinstance(data, dict):
        items = [(_surrogates_shown(k), _surrogates_shown(v)) for k, v in data.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, data.items(), strict=True)):
            return data
        return dict(items)
    if isinstance(data, list):
        shown_items = [_surrogates_shown(item) for item in data]
        if all(a is b for a, b in zip(shown_items, data, strict=True)):
            return data
        return shown_items
    return data


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    response = _api_error_response(exc, context)
    if response is not None:
        response.data = _surrogates_shown(response.data)
    return response


def _api_error_response(exc: Exception, context: dict) -> Response | None:
    if database_busy(exc):
        return Response(
            {"message": DATABASE_BUSY_MESSAGE, "extra": {}},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    if isinstance(exc, StoreUnavailable):
        return Response(
            {"message": str(exc), "extra": {}}, status=status.HTTP_503_SERVICE_UNAVAILABLE
        )
    if isinstance(exc, FactNotFound):  # erased meanwhile, between the lookup and the write
        return Response({"message": str(exc), "extra": {}}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, MemoryServiceError):
        return Response({"message": str(exc), "extra": {}}, status=status.HTTP_400_BAD_REQUEST)

    exc = _as_drf(exc)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.Throttled):
        # DRF's "Requête ralentie." says it was slowed down: it was refused.
        wait = math.ceil(exc.wait) if exc.wait is not None else None
        message = THROTTLED_MESSAGE.format(wait=wait) if wait else THROTTLED_LATER_MESSAGE
        response.data = {"message": message, "extra": {}}
        return response
    if isinstance(exc, exceptions.ValidationError):
        extra = (
            response.data
            if isinstance(response.data, dict)
            else {"non_field_errors": response.data}
        )
        fields = _null_body_said_in_french(extra)
        response.data = {"message": VALIDATION_MESSAGE, "extra": {"fields": fields}}
    else:
        detail = (
            response.data.get("detail", "") if isinstance(response.data, dict) else response.data
        )
        response.data = {"message": str(detail), "extra": {}}
    return response


def is_api_request(request: HttpRequest) -> bool:
    """Whether ``request`` is for the API or the MCP server (its path inside the site)."""
    path = request.path_info
    return path == MCP_PATH or path.startswith(API_PREFIXES)


def api_error(message: str, *, status: int) -> JsonResponse:
    """The API's error body, {"message", "extra"}, for an answer given outside DRF."""
    return JsonResponse(
        {"message": message, "extra": {}}, status=status, json_dumps_params={"ensure_ascii": False}
    )


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: the API's JSON error for the API and MCP, Django's HTML page elsewhere."""
    if is_api_request(request):
        return api_error(API_NOT_FOUND_MESSAGE, status=status.HTTP_404_NOT_FOUND)
    return defaults.page_not_found(request, exception)
