"""The admin's irreversible actions ask first, on a page naming what they take, as
Django's own delete does (QA: « Effacer définitivement » erased on one POST)."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.admin import helpers
from django.http import HttpRequest
from django.template.response import TemplateResponse


def erase_unconfirmed(
    modeladmin, request: HttpRequest, queryset, *, action: str, question: str, rows: Iterable[str]
) -> TemplateResponse | None:
    """The confirmation page of ``action`` on ``queryset``, or None once the owner said yes
    (the page posts the same selection back with ``post=yes``)."""
    if request.POST.get("post") == "yes":
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": "Effacer définitivement ?",
        "opts": modeladmin.model._meta,
        "queryset": queryset,
        "action": action,
        "question": question,
        "rows": list(rows),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/memory/erase_confirmation.html", context)
