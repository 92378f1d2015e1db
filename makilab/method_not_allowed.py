"""A French page for Django's bodiless 405 (``require_POST`` and the views' own checks).

A browser lands on a GET of an action URL (a bookmark, Enter in the address bar after a
plain POST rendered the page there): Django answers 405 with an empty body, a blank page.
This middleware gives every empty 405 the French page, keeping its ``Allow`` header; a
405 with a body (the API's JSON, DRF's French message) is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse

# The page whose forms post to an action URL, by the URL's beginning: (url name, its words).
FORM_PAGES = (("/chat/", "agent:chat", "la discussion"),)
DEFAULT_FORM_PAGE = ("dashboard:memory", "la mémoire")


class MethodNotAllowedPage:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or getattr(response, "streaming", False):
            return response
        if response.content:
            return response
        name, words = next(
            (
                (name, words)
                for prefix, name, words in FORM_PAGES
                if request.path.startswith(prefix)
            ),
            DEFAULT_FORM_PAGE,
        )
        context = {"method": request.method, "back_url": reverse(name), "back_words": words}
        page = HttpResponse(render_to_string("405.html", context, request=request), status=405)
        if response.has_header("Allow"):
            page["Allow"] = response["Allow"]
        return page
