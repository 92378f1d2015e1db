"""A form body or a query string that is not text in its charset, a form body over
the size limit, or either with more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS, is a
French 400.

Django decodes the percent-decoded bytes of a form body (application/x-www-form-
urlencoded) and of the query string with replacement characters: "key=%ff%fe"
reaches a view as "��" and would be stored as such. This middleware refuses
them before any view runs, in the request's charset (utf-8 unless the
Content-Type names another): the API and /mcp get the API's JSON shape
({"message", "extra"}, as memory/api/parsers.py words its own encoding
error), an htmx request a short fragment, a page templates/400.html.
Multipart bodies (file uploads) are left to Django.

Too many fields: Django raises TooManyFieldsSent wherever the query string or the body
is first read (DRF's content negotiation, a form parser), which ends in its generic
HTML 400 page and an ERROR traceback; checked here, every caller gets the French answer.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, QueryDict
from django.template.loader import render_to_string
from django.utils.html import format_html

from makilab.exception_handlers import api_error, is_api_request
from memory.models.rules import french_number

FORM_BAD_ENCODING_MESSAGE = "Formulaire invalide : le texte n'est pas en {encoding}."
QUERY_BAD_ENCODING_MESSAGE = "Adresse invalide : ses paramètres ne sont pas en {encoding}."
FORM_TOO_LARGE_MESSAGE = (
    "Formulaire trop volumineux : {limit} octets au plus (MAKILAB_MAX_BODY_BYTES). "
    "Raccourcissez le texte."
)
QUERY_TOO_MANY_MESSAGE = "Adresse invalide : trop de paramètres ({limit} au plus)."
FORM_TOO_MANY_MESSAGE = "Formulaire invalide : trop de champs ({limit} au plus)."
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


def urlencoded_is_text(raw: bytes, encoding: str) -> bool:
    """Whether the percent-decoded ``raw`` ("a=%C3%A9&b=c") decodes in ``encoding``.

    "&", "=" and "+" are ASCII, so decoding the whole string tells the same as
    decoding each name and value apart.
    """
    try:
        unquote_to_bytes(raw.replace(b"+", b" ")).decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return False
    return True


def urlencoded_has_too_many_fields(raw: bytes, encoding: str) -> bool:
    """Whether ``raw`` holds more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS, counted
    by Django's own parser (QueryDict), so the limit is the one Django enforces."""
    try:
        QueryDict(raw, encoding=encoding)
    except TooManyFieldsSent:
        return True
    return False


def _field_limit() -> str:
    return french_number(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS)


class RequestEncodingCheck:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        message = self.problem(request)
        if message is None:
            return self.get_response(request)
        return self.refusal(request, message)

    @staticmethod
    def problem(request: HttpRequest) -> str | None:
        """The French message for what is not text in the request, or None."""
        encoding = request.encoding or settings.DEFAULT_CHARSET
        query = request.META.get("QUERY_STRING", "")
        try:
            query_bytes = query.encode("iso-8859-1")  # WSGI's str of the raw bytes
        except UnicodeEncodeError:
            query_bytes = query.encode("utf-8", "surrogateescape")
        if query_bytes and not urlencoded_is_text(query_bytes, encoding):
            return QUERY_BAD_ENCODING_MESSAGE.format(encoding=encoding)
        if query_bytes and urlencoded_has_too_many_fields(query_bytes, encoding):
            return QUERY_TOO_MANY_MESSAGE.format(limit=_field_limit())
        if request.content_type != FORM_CONTENT_TYPE:
            return None
        try:
            body = request.body
        except RequestDataTooBig:
            if is_api_request(request):
                return None  # the API's parser answers the size, in its JSON shape
            # Django's answer is its generic 400 page, which the htmx popup cannot read
            # (QA: « Réessayez » for a chat message that can only fail again).
            limit = french_number(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
            return FORM_TOO_LARGE_MESSAGE.format(limit=limit)
        if body and not urlencoded_is_text(body, encoding):
            return FORM_BAD_ENCODING_MESSAGE.format(encoding=encoding)
        if body and urlencoded_has_too_many_fields(body, encoding):
            return FORM_TOO_MANY_MESSAGE.format(limit=_field_limit())
        return None

    @staticmethod
    def refusal(request: HttpRequest, message: str) -> HttpResponse:
        if is_api_request(request):
            return api_error(message, status=400)
        if request.headers.get("HX-Request") == "true":
            return HttpResponse(format_html('<p class="error">{}</p>', message), status=400)
        # Without the request's context, as 500.html and 503.html.
        return HttpResponse(render_to_string("400.html", {"message": message}), status=400)
