"""What every section of /memory shares: the htmx request type, answering a section or a
fragment (its partial to htmx, the whole page otherwise), form errors from a service.

Every URL also works without JavaScript: a plain request gets the page (or the
fragment inside the layout), so a reload or a bookmark shows the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django_htmx.middleware import HtmxDetails

UNPROCESSABLE = 422


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def section_url(section: str) -> str:
    return reverse("dashboard:memory") + f"#{section}"


def section(
    request: HtmxHttpRequest,
    partial: str,
    builder: Callable[..., dict[str, Any]],
    *,
    status: int = 200,
    **overrides: Any,
) -> HttpResponse:
    """A section's partial for htmx (``builder(request, **overrides)``); the page otherwise."""
    if request.htmx:
        return render(request, partial, builder(request, **overrides), status=status)
    from dashboard.views import memory_page_render

    return memory_page_render(request, status=status, **overrides)


def fragment(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """A fragment for htmx; the same fragment inside the layout for a plain request."""
    if request.htmx:
        return render(request, template, context, status=status)
    page_context = {**context, "fragment_template": template, "nav": "memory"}
    return render(request, "dashboard/memory/fragment_page.html", page_context, status=status)
