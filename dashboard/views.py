"""The /memory page, its "Faits" and "Recherche" sections, and /costs.

The page gathers every section's context; the other sections have a module of
their own (agent_self, retrieval, notes, forgetting, rooms). One view per
section and per action. A section view answers its partial (``_section.html``)
to htmx and the whole page otherwise, so every URL also works without
JavaScript (a reload, a bookmark; sections.py). Actions validate a form, call
one service, and answer the updated fragment to htmx or redirect back to the
page (post/redirect/get) without it. Form errors answer 422, which htmx is
configured to swap (base.html) so the errors are shown in place.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.agent_self import self_context
from dashboard.auth import staff_required
from dashboard.forgetting import forget_context
from dashboard.forms import (
    FactAddForm,
    FactEditForm,
    FactFilterForm,
    SearchForm,
)
from dashboard.notes import notes_context
from dashboard.opened_forms import FACT_VERSION_UNREADABLE
from dashboard.retrieval import retrieval_context
from dashboard.rooms import rooms_context
from dashboard.sections import (
    UNPROCESSABLE,
    HtmxHttpRequest,
    facts_count_context,
    fragment,
    isolated_in,
    section,
    section_url,
    with_facts_count,
)
from dashboard.selectors import costs_summary_get
from memory.exceptions import FactChanged, FactNotFound, MemoryServiceError, StoreUnavailable
from memory.form_errors import form_errors_add
from memory.models import Actor, Fact
from memory.selectors import card_fact_get, fact_get, fact_list
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.search import memory_search

logger = logging.getLogger(__name__)

PAGE_TEMPLATE = "dashboard/memory/page.html"
FACTS_SHOWN_MAX = 500
SEARCH_LIMIT = 20
SEARCH_FILTER_FIELDS = ("channel", "memory_type", "subjects", "since", "until")
HIT_KIND_LABELS = {
    "fact": "Fait",
    "exchange": "Échange",
    "message": "Message",
    "summary": "Résumé",
}


# --- Section contexts: what each section needs, shared by partial and page -------


def _facts_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    filter_form = FactFilterForm(request.GET)
    if filter_form.is_valid():
        facts = fact_list(
            search=filter_form.cleaned_data["filter"],
            include_forgotten=filter_form.cleaned_data["forgotten"],
            include_expired=True,
        )
    else:
        # The list shows the filter's error, not every fact as if all matched (QA).
        facts = Fact.objects.none()
    total = facts.count()
    context = {
        "facts": list(facts[:FACTS_SHOWN_MAX]),
        "facts_total": total,
        "facts_truncated": total > FACTS_SHOWN_MAX,
        "filter_form": filter_form,
        "add_form": FactAddForm(),
        "facts_message": "",
        **facts_count_context(),
    }
    context.update(overrides)
    return context


def _search_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    context: dict[str, Any] = {"search_hits": None, "search_error": "", **overrides}
    if "q" not in request.GET:
        context["search_form"] = SearchForm(initial={"mode": "semantic"})
        return context
    form = SearchForm(request.GET)
    context["search_form"] = form
    if form.is_valid():
        try:
            hits = memory_search(
                query=form.cleaned_data["q"],
                mode=form.cleaned_data["mode"],
                limit=SEARCH_LIMIT,
                filters=form.cleaned_data["filters"],
            )
        except StoreUnavailable as exc:
            context["search_error"] = str(exc)
        else:
            context["search_hits"] = [
                {**asdict(hit), "kind_label": HIT_KIND_LABELS.get(hit.kind, hit.kind)}
                for hit in hits
            ]
        context["search_query"] = form.cleaned_data["q"]
        context["search_mode"] = form.cleaned_data["mode"]
        context["search_filtered"] = form.cleaned_data["filters"] is not None
        context["search_filter_params"] = urlencode(
            {k: request.GET[k] for k in SEARCH_FILTER_FIELDS if request.GET.get(k)}
        )
    return context


def memory_page_render(
    request: HttpRequest, *, status: int = 200, **overrides: Any
) -> HttpResponse:
    """The whole /memory page; ``overrides`` replace parts of one section's context."""
    context = {
        "nav": "memory",
        **_facts_context(request),
        **self_context(request),
        **_search_context(request),
        **retrieval_context(request),
        **notes_context(request),
        **forget_context(request),
        **rooms_context(request),
        **overrides,
    }
    return render(request, PAGE_TEMPLATE, context, status=status)


# --- The page ----------------------------------------------------------------------


@staff_required
@require_GET
def memory_page(request: HtmxHttpRequest) -> HttpResponse:
    return memory_page_render(request)


# --- Faits -------------------------------------------------------------------------


def _fact_or_404(key: str) -> Fact:
    with _erased_meanwhile_is_404():
        return fact_get(key=key)


def _card_fact_or_404(request: HttpRequest, key: str) -> Fact:
    """The fact the card whose button was posted shows (card_fact_get)."""
    with _erased_meanwhile_is_404():
        return card_fact_get(key=key, card=request.POST.get("fact"))


@contextlib.contextmanager
def _erased_meanwhile_is_404():
    """FactNotFound, at the lookup or at the write (the fact erased meanwhile), as a 404."""
    try:
        yield
    except FactNotFound as exc:
        raise Http404(str(exc)) from None


def _edit_auto_id(fact: Fact) -> str:
    # Several edit forms and the add form share one page: ids must not collide.
    return f"id_fact{fact.pk}_%s"


def _fact_card(request: HttpRequest, fact: Fact, *, status: int = 200, message: str = ""):
    return render(
        request,
        "dashboard/memory/_fact_card.html",
        {"fact": fact, "fact_message": message},
        status=status,
    )


@staff_required
def facts_section(request: HtmxHttpRequest) -> HttpResponse:
    """GET: the facts, filtered. POST: add a fact (or update the one with that key)."""
    partial = "dashboard/memory/_facts.html"
    if request.method == "GET":
        # A filter the form refuses (over 500 characters, a NUL) is a form error: 422.
        status = UNPROCESSABLE if not FactFilterForm(request.GET).is_valid() else 200
        return section(request, partial, _facts_context, status=status)
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    form = FactAddForm(request.POST)
    if form.is_valid():
        try:
            fact, created = fact_store(**form.stated(), actor=Actor.USER)
        except (ValidationError, MemoryServiceError) as exc:
            form_errors_add(form, exc)
        else:
            if not request.htmx:
                return redirect(section_url("faits"))
            verb = "ajouté" if created else "mis à jour"
            message = isolated_in(f"Fait « {fact.key} » {verb}.", fact.key)
            return render(request, partial, _facts_context(request, facts_message=message))
    return section(request, partial, _facts_context, status=UNPROCESSABLE, add_form=form)


@staff_required
@require_GET
def fact_card(request: HtmxHttpRequest, key: str) -> HttpResponse:
    fact = _fact_or_404(key)
    if not request.htmx:
        return redirect(section_url("faits"))
    return _fact_card(request, fact)


@staff_required
def fact_edit(request: HtmxHttpRequest, key: str) -> HttpResponse:
    """GET: the inline edit form. POST: save it."""
    template = "dashboard/memory/_fact_edit.html"
    if request.method == "GET":
        fact = _fact_or_404(key)
        form = FactEditForm(auto_id=_edit_auto_id(fact), initial=FactEditForm.initial_of(fact))
        return fragment(request, template, {"fact": fact, "form": form})
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    # The fact the form was opened on, by its number (QA 4: forgotten since and its key
    # stated anew, the save went to the new fact).
    fact = _card_fact_or_404(request, key)
    form = FactEditForm(request.POST, auto_id=_edit_auto_id(fact))
    if form.is_valid():
        try:
            # Only the fields the owner changed; refused when the fact changed since the
            # form opened (FactChanged).
            fact = fact_update(
                fact=fact, actor=Actor.USER, opened=form.opened_version(), **form.changes()
            )
        except FactChanged as exc:
            # Said, with what changed since; the form comes back over the fact as stored
            # now (the owner's changes kept), so saving again writes only those, knowingly.
            fact = _card_fact_or_404(request, key)
            form = form.over(fact, form.changed_text(fact, str(exc)))
        except (ValidationError, MemoryServiceError) as exc:
            form_errors_add(form, exc)
        else:
            if not request.htmx:
                return redirect(section_url("faits"))
            # A new expiry may make the fact active again, or no longer: the count follows.
            return with_facts_count(request, _fact_card(request, fact, message="Enregistré."))
    elif form.has_error("opened"):
        # Not a version any page gave: the form comes back over the fact as stored now.
        form = form.over(fact, FACT_VERSION_UNREADABLE)
    # The form again, its errors said: the card for htmx, the page around it otherwise.
    return fragment(request, template, {"fact": fact, "form": form}, status=UNPROCESSABLE)


@staff_required
@require_POST
def fact_forget_view(request: HtmxHttpRequest, key: str) -> HttpResponse:
    with _erased_meanwhile_is_404():
        fact = fact_forget(fact=_card_fact_or_404(request, key), actor=Actor.USER)
    if not request.htmx:
        return redirect(section_url("faits"))
    message = "Fait oublié. Vous pouvez le restaurer."
    return with_facts_count(request, _fact_card(request, fact, message=message))


@staff_required
@require_POST
def fact_restore_view(request: HtmxHttpRequest, key: str) -> HttpResponse:
    with _erased_meanwhile_is_404():
        fact = fact_restore(fact=_card_fact_or_404(request, key), actor=Actor.USER)
    if not request.htmx:
        return redirect(section_url("faits"))
    return with_facts_count(request, _fact_card(request, fact, message="Fait restauré."))


@staff_required
@require_GET
def fact_history(request: HtmxHttpRequest, key: str) -> HttpResponse:
    fact = _fact_or_404(key)
    return fragment(
        request,
        "dashboard/memory/_fact_history.html",
        {"fact": fact, "revisions": fact.revisions.all()[:100]},
    )


# --- Recherche ---------------------------------------------------------------------


@staff_required
@require_GET
def search_section(request: HtmxHttpRequest) -> HttpResponse:
    # A search whose fields are wrong (a date that does not exist) is a form error: 422.
    invalid = "q" in request.GET and not SearchForm(request.GET).is_valid()
    status = UNPROCESSABLE if invalid else 200
    return section(request, "dashboard/memory/_search.html", _search_context, status=status)


# --- Coûts -------------------------------------------------------------------------


@staff_required
@require_GET
def costs_page(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/costs.html", {"nav": "costs", **costs_summary_get()})
