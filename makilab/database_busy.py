"""A database held by another process is a French 503 "réessayez", never a 500.

Within one process the writers queue for SQLite's lock (memory/db/backend), but
another process (``memory_import`` holds the write lock for its whole run, a
``memory_restore``, a maintenance script) can keep it past the busy timeout:
SQLite then says "database is locked". Nothing is wrong with the request and
nothing was written (the transaction rolled back), so the client is told to
try again, with ``Retry-After``. The API's exception handler
(makilab.exception_handlers) answers its JSON; this middleware answers the
pages (/memory, the admin) with templates/503.html, and JSON to a client that
does not take HTML (the MCP endpoint).
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

DATABASE_BUSY_MESSAGE = (
    "La base est occupée par une autre opération (import, maintenance) : réessayez dans un instant."
)
RETRY_AFTER_S = 5


def database_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite refusing its lock (held by another process), not a fault."""
    if not isinstance(exc, OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class DatabaseBusyPage:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_busy(exception):
            return None
        if request.accepts("text/html"):
            # Rendered without the request's context, as 500.html: the page must not
            # need the database that just refused.
            response = HttpResponse(
                render_to_string("503.html", {"message": DATABASE_BUSY_MESSAGE}), status=503
            )
        else:
            response = JsonResponse(
                {"message": DATABASE_BUSY_MESSAGE, "extra": {}},
                status=503,
                json_dumps_params={"ensure_ascii": False},
            )
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
