"""The "Oublier un sujet" section of /memory: preview, confirm, undo; and the hard deletes
(a fact, or what a forget took, erased at once).

A forget is never one click: the topic first shows what it would take (the
dry run), and only the confirmation forgets. Recent forgets are listed with
their undo button while they can be undone, and the date they become final.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST

from dashboard.auth import staff_required
from dashboard.sections import isolated_in, section, with_facts_count, with_facts_reloaded
from dashboard.templatetags.dashboard_labels import forget_counts
from memory.exceptions import FactNotFound, MemoryServiceError
from memory.models import Actor, Forgetting
from memory.selectors import card_fact_get
from memory.services.erasing import fact_erase, forgetting_erase
from memory.services.forgetting import (
    forgetting_restore,
    topic_forget,
    topic_forget_preview,
)

PARTIAL = "dashboard/memory/_forget.html"
RECENT_MAX = 10
CONFIRM_WITHOUT_PREVIEW = (
    "Rien n'est oublié sans aperçu : affichez d'abord l'aperçu de ce sujet, puis confirmez-le."
)


class ForgetForm(forms.Form):
    topic = forms.CharField(label="Sujet à oublier", max_length=200)


def forget_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    return {
        "forget_form": ForgetForm(),
        "forget_plan": None,
        "forget_message": "",
        "forgettings": list(Forgetting.objects.all()[:RECENT_MAX]),
        **overrides,
    }


def _render(request: HttpRequest, *, status: int = 200, **overrides: Any) -> HttpResponse:
    return section(request, PARTIAL, forget_context, status=status, **overrides)


@staff_required
@require_GET
def forget_section(request: HttpRequest) -> HttpResponse:
    return _render(request)


@staff_required
@require_POST
def forget_preview(request: HttpRequest) -> HttpResponse:
    """Step 1: what the forget would take. Nothing changes."""
    form = ForgetForm(request.POST)
    if not form.is_valid():
        return _render(request, status=422, forget_form=form)
    try:
        plan = topic_forget_preview(topic=form.cleaned_data["topic"])
    except MemoryServiceError as exc:
        form.add_error("topic", isolated_in(str(exc), form.cleaned_data["topic"]))
        return _render(request, status=422, forget_form=form)
    return _render(request, forget_form=form, forget_plan=plan)


@staff_required
@require_POST
def forget_confirm(request: HttpRequest) -> HttpResponse:
    """Step 2: the owner confirmed: forget."""
    form = ForgetForm(request.POST)
    if not form.is_valid():
        return _render(request, status=422, forget_form=form)
    items = request.POST.getlist("item")
    if not items:
        # No preview behind it (QA: it took everything the topic matched).
        form.add_error("topic", CONFIRM_WITHOUT_PREVIEW)
        return _render(request, status=422, forget_form=form)
    try:
        # Only what the preview showed: a new selection may not take more.
        result = topic_forget(topic=form.cleaned_data["topic"], actor=Actor.USER, only=items)
    except MemoryServiceError as exc:
        form.add_error("topic", isolated_in(str(exc), form.cleaned_data["topic"]))
        return _render(request, status=422, forget_form=form)
    if result.forgetting_id is None:
        message = "Rien à oublier sur ce sujet."
    else:
        message = (
            f"Oublié : {forget_counts(result.counts)}. Annulable jusqu'au "
            f"{timezone.localtime(result.purge_after):%d/%m/%Y}."
        )
    if result.ids_not_taken:  # a preview gone stale meanwhile: said, not dropped silently
        message += f" {result.not_taken_text()}"
    return with_facts_reloaded(request, _render(request, forget_message=message))


@staff_required
@require_POST
def forget_restore(request: HttpRequest, forgetting_id: int) -> HttpResponse:
    message = "Oubli annulé : tout est revenu dans la mémoire."
    return _on_forgetting(request, forgetting_id, forgetting_restore, message)


def _on_forgetting(request: HttpRequest, forgetting_id: int, service, done: str) -> HttpResponse:
    """Restore or erase one forget, the section saying how it went."""
    try:
        service(forgetting_id=forgetting_id, actor=Actor.USER)
    except MemoryServiceError as exc:
        return _render(request, status=422, forget_message=str(exc))
    return with_facts_reloaded(request, _render(request, forget_message=done))


@staff_required
@require_POST
def forget_erase(request: HttpRequest, forgetting_id: int) -> HttpResponse:
    """Erase what a forget took now, without waiting for its retention window."""
    message = "Effacé définitivement : plus rien n'en reste."
    return _on_forgetting(request, forgetting_id, forgetting_erase, message)


@staff_required
@require_POST
def fact_erase_view(request: HttpRequest, key: str) -> HttpResponse:
    """The fact and its history leave every tier and the logs; its card says so."""
    try:  # not found, or erased by another request meanwhile
        fact = card_fact_get(key=key, card=request.POST.get("fact"))  # the card's fact
        fact_erase(fact=fact, actor=Actor.USER)
    except FactNotFound as exc:
        raise Http404(str(exc)) from None
    if not getattr(request, "htmx", False):
        return redirect(reverse("dashboard:memory") + "#faits")
    notice = format_html(
        '<p class="notice" role="status">Fait « <bdi>{}</bdi> » effacé définitivement.</p>', key
    )
    return with_facts_count(request, HttpResponse(notice))
