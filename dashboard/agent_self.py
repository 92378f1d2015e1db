"""The "Moi & objectifs" section of /memory: what the agent knows about itself, and its goals.

Listed by kind and category; each item can be edited, deleted (with a reason,
kept in its history) or restored, and its history shown. Adding one goes
through the same dedup as the agent's own tool. Same htmx shape as the other
sections: the partial to htmx, the whole page otherwise.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.auth import staff_required
from dashboard.opened_forms import FACT_VERSION_UNREADABLE, OpenedVersionForm
from dashboard.sections import fragment, section
from memory.exceptions import FactChanged, MemoryServiceError
from memory.models import (
    CATEGORY_LABELS,
    KIND_CATEGORIES,
    Actor,
    Fact,
    FactKind,
    GoalCategory,
    RevisionReason,
    SelfCategory,
)
from memory.services.facts import fact_restore, fact_update
from memory.services.self_memory import (
    REASON_MAX_CHARS,
    agent_item_delete,
    agent_item_store,
)
from memory.services.self_memory_reads import agent_item_get, agent_items_list
from memory.services.self_memory_validate import CONTENT_MAX_CHARS

PARTIAL = "dashboard/memory/_self.html"
ITEM = "dashboard/memory/_self_item.html"
KIND_TITLES = {FactKind.SELF: "Moi", FactKind.GOAL: "Mes objectifs"}
CATEGORY_CHOICES = [
    ("Moi", list(SelfCategory.choices)),
    ("Objectifs", list(GoalCategory.choices)),
]
CATEGORY_KIND = {
    **dict.fromkeys(SelfCategory.values, FactKind.SELF),
    **dict.fromkeys(GoalCategory.values, FactKind.GOAL),
}


class AgentItemForm(forms.Form):
    """An item's category (its kind follows: a self category or a goal category) and text."""

    category = forms.ChoiceField(label="Catégorie", choices=CATEGORY_CHOICES)
    content = forms.CharField(
        label="Contenu", max_length=CONTENT_MAX_CHARS, widget=forms.Textarea(attrs={"rows": 2})
    )


class AgentItemEditForm(OpenedVersionForm, AgentItemForm):
    """An item's edit over the version it opened: only what the owner changed is written,
    and a change made since (another tab, the agent, the admin) is said, not undone (QA 3:
    changing the category put back a text corrected since)."""

    SHOWN_FIELDS = ("category", "content")
    FIELD_ATTRS = {"content": "value"}


class AgentItemDeleteForm(forms.Form):
    reason = forms.CharField(label="Raison", max_length=REASON_MAX_CHARS)


def self_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    show_forgotten = request.GET.get("self_forgotten") == "on"
    items = list(agent_items_list(include_forgotten=show_forgotten))
    groups = []
    for kind in (FactKind.SELF, FactKind.GOAL):
        categories = [
            {
                "label": CATEGORY_LABELS[category],
                "items": [i for i in items if i.kind == kind and i.category == category],
            }
            for category in KIND_CATEGORIES[kind]
        ]
        groups.append({"kind": kind, "title": KIND_TITLES[kind], "categories": categories})
    return {
        "self_groups": groups,
        "self_total": len(items),
        "self_show_forgotten": show_forgotten,
        "self_form": AgentItemForm(),
        "self_message": "",
        **overrides,
    }


def _render(request: HttpRequest, *, status: int = 200, **overrides: Any) -> HttpResponse:
    return section(request, PARTIAL, self_context, status=status, **overrides)


def _item_or_404(item_id: int) -> Fact:
    try:
        return agent_item_get(kind=None, item_id=item_id)
    except MemoryServiceError as exc:
        raise Http404(str(exc)) from None


def _item(request: HttpRequest, item: Fact, *, status: int = 200, **extra: Any) -> HttpResponse:
    return fragment(request, ITEM, {"item": item, **extra}, status=status)


@staff_required
@require_http_methods(["GET", "POST"])
def self_section(request: HttpRequest) -> HttpResponse:
    """GET: the section. POST: add an item (deduplicated like the agent's own)."""
    if request.method == "GET":
        return _render(request)
    form = AgentItemForm(request.POST)
    if not form.is_valid():
        return _render(request, status=422, self_form=form)
    category = form.cleaned_data["category"]
    try:
        result = agent_item_store(
            kind=CATEGORY_KIND[category],
            category=category,
            content=form.cleaned_data["content"],
            actor=Actor.USER,
        )
    except MemoryServiceError as exc:
        form.add_error("content", str(exc))
        return _render(request, status=422, self_form=form)
    message = "Déjà connu : rien de nouveau." if result.action == "noop" else "Enregistré."
    return _render(request, self_message=message)


@staff_required
@require_GET
def self_item_card(request: HttpRequest, item_id: int) -> HttpResponse:
    return _item(request, _item_or_404(item_id))


@staff_required
@require_http_methods(["GET", "POST"])
def self_item_edit(request: HttpRequest, item_id: int) -> HttpResponse:
    item = _item_or_404(item_id)
    if request.method == "GET":
        form = AgentItemEditForm(initial=AgentItemEditForm.initial_of(item))
        return _item(request, item, form=form, editing=True)
    form = AgentItemEditForm(request.POST)
    if form.is_valid() and CATEGORY_KIND[form.cleaned_data["category"]] != item.kind:
        form.add_error("category", "Cette catégorie est d'un autre genre (moi / objectif).")
    if not form.is_valid():
        if form.has_error("opened"):
            # Not a version any page gave: the form comes back over the item as stored now.
            form = form.over(item, FACT_VERSION_UNREADABLE)
        return _item(request, item, status=422, form=form, editing=True)
    try:
        item = fact_update(
            fact=item,
            actor=Actor.USER,
            reason=RevisionReason.EDITED,
            opened=form.opened_version(),
            **form.shown_changes(),
        )
    except FactChanged as exc:
        # Said with what changed; the form comes back over the item as stored now.
        item = _item_or_404(item_id)
        form = form.over(item, form.changed_text(item, str(exc)))
        return _item(request, item, status=422, form=form, editing=True)
    except ValidationError as exc:
        form.add_error("content", exc.messages)
        return _item(request, item, status=422, form=form, editing=True)
    return _item(request, item, item_message="Modifié.")


@staff_required
@require_POST
def self_item_delete(request: HttpRequest, item_id: int) -> HttpResponse:
    item = _item_or_404(item_id)
    form = AgentItemDeleteForm(request.POST)
    if not form.is_valid():
        return _item(request, item, status=422, delete_form=form)
    item = agent_item_delete(
        kind=item.kind, item_id=item.pk, reason=form.cleaned_data["reason"], actor=Actor.USER
    )
    return _item(request, item, item_message="Supprimé (restaurable).")


@staff_required
@require_POST
def self_item_restore(request: HttpRequest, item_id: int) -> HttpResponse:
    item = fact_restore(fact=_item_or_404(item_id), actor=Actor.USER)
    return _item(request, item, item_message="Restauré.")


@staff_required
@require_GET
def self_item_history(request: HttpRequest, item_id: int) -> HttpResponse:
    item = _item_or_404(item_id)
    return fragment(
        request,
        "dashboard/memory/_fact_history.html",
        {"fact": item, "revisions": item.revisions.all()[:100]},
    )
