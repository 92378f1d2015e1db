"""The /memory page (four sections) and /costs.

One view per section and per action. A section view answers its partial
(``_section.html``) to htmx and the whole page otherwise, so every URL also
works without JavaScript (a reload, a bookmark). Actions validate a form,
call one service, and answer the updated fragment to htmx or redirect back
to the page (post/redirect/get) without it. Form errors answer 422, which
htmx is configured to swap (base.html) so the errors are shown in place.

Parts built elsewhere (retrieval preview, notes) are imported lazily: when
one is missing or its store is down, its section says so in French and the
rest of the page works.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from dashboard.agent_self import self_context
from dashboard.auth import staff_required
from dashboard.forgetting import forget_context
from dashboard.forms import (
    FactAddForm,
    FactEditForm,
    FactFilterForm,
    NotePathForm,
    NotesToggleForm,
    NoteTagForm,
    PreviewForm,
    RetrievalSettingsForm,
    SearchForm,
)
from dashboard.rooms import rooms_context
from dashboard.selectors import costs_summary_get
from memory.exceptions import FactNotFound, MemoryServiceError, StoreUnavailable
from memory.models import Actor, Fact
from memory.selectors import fact_get, fact_list, memory_settings_get, retrieval_list
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.search import memory_search
from memory.services.settings import memory_settings_update

logger = logging.getLogger(__name__)

PAGE_TEMPLATE = "dashboard/memory/page.html"
FACTS_SHOWN_MAX = 500
RETRIEVALS_SHOWN = 20
UNPROCESSABLE = 422

PREVIEW_UNAVAILABLE_MESSAGE = (
    "Aperçu indisponible : le module d'auto-retrieval n'est pas encore installé."
)
NOTES_UNAVAILABLE_MESSAGE = (
    "Notes Obsidian indisponibles : le module de notes n'est pas encore installé."
)
SEARCH_LIMIT = 20
SEARCH_FILTER_FIELDS = ("channel", "memory_type", "subjects", "since", "until")
HIT_KIND_LABELS = {
    "fact": "Fait",
    "exchange": "Échange",
    "message": "Message",
    "summary": "Résumé",
}
NOTE_SOURCE_LABELS = {"fixed": "fixe", "tag": "taguée", "tagged": "taguée"}


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _section_url(section: str) -> str:
    return reverse("dashboard:memory") + f"#{section}"


def _form_errors_add(form, exc: Exception, *, field: str | None = None) -> None:
    """A service's refusal shown on the form: on the field it names, else on ``field``."""
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        for name, messages in exc.message_dict.items():
            form.add_error(name if name in form.fields else field, messages)
    elif isinstance(exc, ValidationError):
        form.add_error(field, exc.messages)
    else:
        form.add_error(field, str(exc))


# --- Lazily imported parts built by others ----------------------------------------


def _preview_function():
    try:
        from memory.services.retrieval import auto_retrieve_preview
    except ImportError as exc:
        logger.debug("retrieval preview unavailable: %s", exc)
        return None
    return auto_retrieve_preview


def _notes_module():
    try:
        notes = importlib.import_module("memory.services.notes")
    except ImportError as exc:
        logger.debug("notes service unavailable: %s", exc)
        return None
    return notes


# --- Section contexts: what each section needs, shared by partial and page -------


def _facts_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    filter_form = FactFilterForm(request.GET)
    query, show_forgotten = "", False
    if filter_form.is_valid():
        query = filter_form.cleaned_data["filter"]
        show_forgotten = filter_form.cleaned_data["forgotten"]
    facts = fact_list(search=query, include_forgotten=show_forgotten, include_expired=True)
    total = facts.count()
    context = {
        "facts": list(facts[:FACTS_SHOWN_MAX]),
        "facts_total": total,
        "facts_truncated": total > FACTS_SHOWN_MAX,
        "filter_form": filter_form,
        "add_form": FactAddForm(),
        "facts_message": "",
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


def _retrieval_rows(retrievals) -> list[dict[str, Any]]:
    """Log rows shaped for the template; the JSON columns are read defensively."""
    rows = []
    for retrieval in retrievals:
        memories = []
        for memory in retrieval.memories or []:
            if not isinstance(memory, dict):
                continue
            scores = []
            for source, info in (memory.get("sources") or {}).items():
                score = info.get("score") if isinstance(info, dict) else info
                if isinstance(score, int | float):
                    scores.append({"source": source, "score": score})
            memories.append(
                {
                    "text": str(memory.get("text", "")),
                    "kind": str(memory.get("kind", "")),
                    "scores": scores,
                    "rrf": memory.get("rrf"),
                }
            )
        notes = [
            str(note.get("path", "")) if isinstance(note, dict) else str(note)
            for note in retrieval.notes or []
        ]
        failed = retrieval.failed_sources if isinstance(retrieval.failed_sources, dict) else {}
        timings = retrieval.timings_ms if isinstance(retrieval.timings_ms, dict) else {}
        rows.append(
            {
                "retrieval": retrieval,
                "memories": memories,
                "notes": notes,
                "failed": sorted(failed.items()),
                "timings": sorted(timings.items()),
            }
        )
    return rows


def _retrieval_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    context = {
        "settings_form": RetrievalSettingsForm(instance=memory_settings_get()),
        "retrieval_rows": _retrieval_rows(retrieval_list()[:RETRIEVALS_SHOWN]),
        "preview_form": PreviewForm(initial={"channel": "dashboard"}),
        "preview_available": _preview_function() is not None,
        "preview": None,
        "preview_error": "",
        "settings_saved": "",
    }
    if "message" in request.GET:
        context.update(_preview_context(request))
    context.update(overrides)
    return context


def _preview_context(request: HttpRequest) -> dict[str, Any]:
    form = PreviewForm(request.GET)
    context: dict[str, Any] = {"preview_form": form, "preview": None, "preview_error": ""}
    if not form.is_valid():
        return context
    preview = _preview_function()
    if preview is None:
        context["preview_error"] = PREVIEW_UNAVAILABLE_MESSAGE
        return context
    try:
        context["preview"] = preview(
            message=form.cleaned_data["message"], channel=form.cleaned_data["channel"]
        )
    except MemoryServiceError as exc:
        context["preview_error"] = f"Aperçu indisponible : {exc}"
    except Exception:
        logger.exception("retrieval preview failed")
        context["preview_error"] = "Aperçu indisponible : erreur inattendue (voir les journaux)."
    return context


def _notes_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    settings = memory_settings_get()
    context: dict[str, Any] = {
        "notes_settings": settings,
        "fixed_paths": list(settings.obsidian_context_notes or []),
        "notes": [],
        "notes_failures": [],
        "notes_unavailable": "",
        "notes_message": "",
        "note_add_form": NotePathForm(),
        "note_tag_form": NoteTagForm(initial={"tag": settings.obsidian_context_tag}),
        "notes_toggle_form": NotesToggleForm(
            initial={"obsidian_context_enabled": settings.obsidian_context_enabled}
        ),
    }
    notes = _notes_module()
    if notes is None:
        context["notes_unavailable"] = NOTES_UNAVAILABLE_MESSAGE
    else:
        context["notes_source"] = notes.notes_source_get()
        result = notes.context_notes_get()
        context["notes"] = [
            {"note": note, "source_label": NOTE_SOURCE_LABELS.get(note.source, note.source)}
            for note in result.notes
        ]
        context["notes_failures"] = sorted(result.failures.items())
    context.update(overrides)
    return context


def _page(request: HttpRequest, *, status: int = 200, **overrides: Any) -> HttpResponse:
    """The whole /memory page; ``overrides`` replace parts of one section's context."""
    context = {
        "nav": "memory",
        **_facts_context(request),
        **self_context(request),
        **_search_context(request),
        **_retrieval_context(request),
        **_notes_context(request),
        **forget_context(request),
        **rooms_context(request),
        **overrides,
    }
    return render(request, PAGE_TEMPLATE, context, status=status)


def _section(
    request: HtmxHttpRequest,
    partial: str,
    builder,
    *,
    status: int = 200,
    **overrides: Any,
) -> HttpResponse:
    if request.htmx:
        return render(request, partial, builder(request, **overrides), status=status)
    return _page(request, status=status, **overrides)


# --- The page ----------------------------------------------------------------------


@staff_required
@require_GET
def memory_page(request: HtmxHttpRequest) -> HttpResponse:
    return _page(request)


# --- Faits -------------------------------------------------------------------------


def _fragment(
    request: HtmxHttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """A fragment for htmx; the same fragment inside the layout for a plain request."""
    if request.htmx:
        return render(request, template, context, status=status)
    page_context = {**context, "fragment_template": template, "nav": "memory"}
    return render(request, "dashboard/memory/fragment_page.html", page_context, status=status)


def _fact_or_404(key: str) -> Fact:
    try:
        return fact_get(key=key)
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
        return _section(request, partial, _facts_context)
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    form = FactAddForm(request.POST)
    if form.is_valid():
        try:
            fact, created = fact_store(**form.stated(), actor=Actor.USER)
        except (ValidationError, MemoryServiceError) as exc:
            _form_errors_add(form, exc)
        else:
            if not request.htmx:
                return redirect(_section_url("faits"))
            verb = "ajouté" if created else "mis à jour"
            return render(
                request,
                partial,
                _facts_context(request, facts_message=f"Fait « {fact.key} » {verb}."),
            )
    return _section(request, partial, _facts_context, status=UNPROCESSABLE, add_form=form)


@staff_required
@require_GET
def fact_card(request: HtmxHttpRequest, key: str) -> HttpResponse:
    fact = _fact_or_404(key)
    if not request.htmx:
        return redirect(_section_url("faits"))
    return _fact_card(request, fact)


@staff_required
def fact_edit(request: HtmxHttpRequest, key: str) -> HttpResponse:
    """GET: the inline edit form. POST: save it."""
    fact = _fact_or_404(key)
    template = "dashboard/memory/_fact_edit.html"
    if request.method == "GET":
        form = FactEditForm(
            auto_id=_edit_auto_id(fact),
            initial={
                "value": fact.value,
                "memory_type": fact.memory_type,
                "importance": fact.importance,
                "subjects": fact.subjects,
            },
        )
        return _fragment(request, template, {"fact": fact, "form": form})
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    form = FactEditForm(request.POST, auto_id=_edit_auto_id(fact))
    if form.is_valid():
        try:
            fact = fact_update(fact=fact, actor=Actor.USER, **form.changes())
        except (ValidationError, MemoryServiceError) as exc:
            _form_errors_add(form, exc)
        else:
            if not request.htmx:
                return redirect(_section_url("faits"))
            return _fact_card(request, fact, message="Enregistré.")
    return render(request, template, {"fact": fact, "form": form}, status=UNPROCESSABLE)


@staff_required
@require_POST
def fact_forget_view(request: HtmxHttpRequest, key: str) -> HttpResponse:
    fact = fact_forget(fact=_fact_or_404(key), actor=Actor.USER)
    if not request.htmx:
        return redirect(_section_url("faits"))
    return _fact_card(request, fact, message="Fait oublié. Vous pouvez le restaurer.")


@staff_required
@require_POST
def fact_restore_view(request: HtmxHttpRequest, key: str) -> HttpResponse:
    fact = fact_restore(fact=_fact_or_404(key), actor=Actor.USER)
    if not request.htmx:
        return redirect(_section_url("faits"))
    return _fact_card(request, fact, message="Fait restauré.")


@staff_required
@require_GET
def fact_history(request: HtmxHttpRequest, key: str) -> HttpResponse:
    fact = _fact_or_404(key)
    return _fragment(
        request,
        "dashboard/memory/_fact_history.html",
        {"fact": fact, "revisions": fact.revisions.all()[:100]},
    )


# --- Recherche ---------------------------------------------------------------------


@staff_required
@require_GET
def search_section(request: HtmxHttpRequest) -> HttpResponse:
    return _section(request, "dashboard/memory/_search.html", _search_context)


# --- Auto-retrieval ----------------------------------------------------------------


@staff_required
@require_GET
def retrieval_section(request: HtmxHttpRequest) -> HttpResponse:
    return _section(request, "dashboard/memory/_retrieval.html", _retrieval_context)


@staff_required
@require_POST
def retrieval_settings(request: HtmxHttpRequest) -> HttpResponse:
    """The toggle and the sliders, saved as they move; htmx gets a one-line status."""
    form = RetrievalSettingsForm(request.POST, instance=memory_settings_get())
    status = 200
    if form.is_valid():
        settings = memory_settings_update(changes=form.cleaned_data)
        if not request.htmx:
            return redirect(_section_url("auto-retrieval"))
        context = {"settings": settings, "form": form}
    else:
        status = UNPROCESSABLE
        if not request.htmx:
            return _page(request, status=status, settings_form=form)
        context = {"settings": None, "form": form}
    return render(request, "dashboard/memory/_retrieval_status.html", context, status=status)


@staff_required
@require_GET
def retrieval_preview(request: HtmxHttpRequest) -> HttpResponse:
    if not request.htmx:
        return _page(request)
    return render(request, "dashboard/memory/_retrieval_preview.html", _preview_context(request))


# --- Notes Obsidian ----------------------------------------------------------------


@staff_required
@require_GET
def notes_section(request: HtmxHttpRequest) -> HttpResponse:
    return _section(request, "dashboard/memory/_notes.html", _notes_context)


def _notes_action(request: HtmxHttpRequest, form, action) -> HttpResponse:
    """Validate ``form``, run ``action(cleaned_data)`` (a service call), answer the section."""
    partial = "dashboard/memory/_notes.html"
    overrides: dict[str, Any] = {}
    status = 200
    if form.is_valid():
        try:
            overrides["notes_message"] = action(form.cleaned_data)
        except (ValidationError, MemoryServiceError) as exc:
            # These forms have one field: the refusal is about it.
            _form_errors_add(form, exc, field=next(iter(form.fields)))
    if form.errors:
        status = UNPROCESSABLE
        name = {
            NotePathForm: "note_add_form",
            NoteTagForm: "note_tag_form",
            NotesToggleForm: "notes_toggle_form",
        }.get(type(form))
        if name:
            overrides[name] = form
        overrides["notes_message"] = ""
    elif not request.htmx:
        return redirect(_section_url("notes"))
    return _section(request, partial, _notes_context, status=status, **overrides)


def _notes_service_or_error():
    notes = _notes_module()
    if notes is None:
        raise StoreUnavailable(NOTES_UNAVAILABLE_MESSAGE)
    return notes


@staff_required
@require_POST
def note_add(request: HtmxHttpRequest) -> HttpResponse:
    def action(data):
        _notes_service_or_error().context_note_add(path=data["path"])
        return f"Note « {data['path']} » ajoutée au contexte."

    return _notes_action(request, NotePathForm(request.POST), action)


@staff_required
@require_POST
def note_remove(request: HtmxHttpRequest) -> HttpResponse:
    def action(data):
        _notes_service_or_error().context_note_remove(path=data["path"])
        return f"Note « {data['path']} » retirée du contexte."

    return _notes_action(request, NotePathForm(request.POST), action)


@staff_required
@require_POST
def note_tag(request: HtmxHttpRequest) -> HttpResponse:
    def action(data):
        settings = _notes_service_or_error().context_tag_set(tag=data["tag"])
        return f"Tag enregistré : #{settings.obsidian_context_tag}."

    return _notes_action(request, NoteTagForm(request.POST), action)


@staff_required
@require_POST
def notes_toggle(request: HtmxHttpRequest) -> HttpResponse:
    def action(data):
        enabled = data["obsidian_context_enabled"]
        memory_settings_update(changes={"obsidian_context_enabled": enabled})
        return "Notes Obsidian activées." if enabled else "Notes Obsidian désactivées."

    return _notes_action(request, NotesToggleForm(request.POST), action)


@staff_required
@require_GET
def note_preview(request: HtmxHttpRequest) -> HttpResponse:
    form = NotePathForm(request.GET)
    context: dict[str, Any] = {"note": None, "note_error": "", "path": request.GET.get("path")}
    status = 200
    if not form.is_valid():
        context["note_error"] = "; ".join(form.errors.get("path", ["Chemin invalide."]))
        status = UNPROCESSABLE
    else:
        try:
            context["note"] = _notes_service_or_error().note_preview(path=form.cleaned_data["path"])
        except MemoryServiceError as exc:  # NoteNotFound, UnsafeNotePath, StoreUnavailable
            context["note_error"] = str(exc)
    return _fragment(request, "dashboard/memory/_note_preview.html", context, status=status)


# --- Coûts -------------------------------------------------------------------------


@staff_required
@require_GET
def costs_page(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/costs.html", {"nav": "costs", **costs_summary_get()})
