"""What every section of /memory shares: the htmx request type, answering a section or a
fragment (its partial to htmx, the whole page otherwise), the facts' count refreshed out of
band, the owner's text echoed isolated in a sentence.

Every URL also works without JavaScript: a plain request gets the page (or the
fragment inside the layout), so a reload or a bookmark shows the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django_htmx.middleware import HtmxDetails

from memory.selectors import facts_active

UNPROCESSABLE = 422
FACTS_COUNT_TEMPLATE = "dashboard/memory/_facts_count.html"


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


def facts_count_context() -> dict[str, Any]:
    """The header's count of the Faits section: the facts the memory holds (facts_active:
    neither forgotten nor expired), whatever the list shows."""
    return {"facts_active_total": facts_active().count()}


def with_facts_count(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """An htmx answer to an action that may change which facts are active (a forget, a
    restore, an erase, an edit of the expiry) also refreshes the header's count, out of
    band (QA: it stayed stale until a reload). A plain request gets the whole page."""
    if getattr(request, "htmx", False):
        count = render_to_string(FACTS_COUNT_TEMPLATE, {**facts_count_context(), "oob": True})
        response.content = response.content + count.encode()
    return response


# The htmx event after which the facts list reloads itself, its filter kept (_facts.html).
FACTS_CHANGED_EVENT = "facts-changed"


def with_facts_reloaded(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """An htmx answer to an action that may take or bring back many facts (a topic forget,
    its undo or erasure) also has the facts list reload itself, as with_facts_count's count
    (QA: the facts a topic forget took stayed listed, their buttons live, until a reload).
    A single fact's card answers for itself (its notice stays where the owner clicked)."""
    if getattr(request, "htmx", False):
        response["HX-Trigger"] = FACTS_CHANGED_EVENT
    return with_facts_count(request, response)


def isolated_in(message: str, text: str) -> SafeString:
    """``message`` escaped, the owner's ``text`` it echoes bidi-isolated (<bdi>): a
    right-to-left override in it reverses that text only, not the rest of the sentence.
    The quoted echo (« text ») is wrapped; else every occurrence of the text."""
    html, echoed = str(escape(message)), str(escape(text))
    if not echoed:
        return mark_safe(html)  # escaped above
    quoted = f"« {echoed} »"
    if quoted in html:
        html = html.replace(quoted, f"« <bdi>{echoed}</bdi> »")
    else:
        html = html.replace(echoed, f"<bdi>{echoed}</bdi>")
    return mark_safe(html)  # escaped above
