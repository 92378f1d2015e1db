"""The "Auto-retrieval" section of /memory: the settings (saved as they move), the last
retrievals as the log shows them, and the preview of what a message would get.

The retrieval package is imported lazily: without it the preview says so in French
and the rest of the page works.
"""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import floatformat
from django.views.decorators.http import require_GET, require_POST

from dashboard.auth import staff_required
from dashboard.retrieval_forms import PreviewForm, RetrievalSettingsForm
from dashboard.sections import UNPROCESSABLE, HtmxHttpRequest, section, section_url
from memory.exceptions import MemoryServiceError
from memory.selectors import memory_settings_get, retrieval_list
from memory.services.settings import SettingsChanged, memory_settings_update

logger = logging.getLogger(__name__)

PARTIAL = "dashboard/memory/_retrieval.html"
STATUS_TEMPLATE = "dashboard/memory/_retrieval_status.html"
RETRIEVALS_SHOWN = 20
SETTING_CHANGED_MESSAGE = (
    "« {label} » a changé depuis l'ouverture de la page (l'API, l'administration ou un "
    "autre onglet) : il vaut maintenant {value}."
)
SETTINGS_CHANGED_END = (
    "Rien n'a été enregistré : déplacez à nouveau le réglage pour garder le vôtre."
)
PREVIEW_UNAVAILABLE_MESSAGE = (
    "Aperçu indisponible : le module d'auto-retrieval n'est pas encore installé."
)


def _preview_function():
    try:
        from memory.services.retrieval import auto_retrieve_preview
    except ImportError as exc:
        logger.debug("retrieval preview unavailable: %s", exc)
        return None
    return auto_retrieve_preview


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


def retrieval_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
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


@staff_required
@require_GET
def retrieval_section(request: HtmxHttpRequest) -> HttpResponse:
    return section(request, PARTIAL, retrieval_context)


@staff_required
@require_POST
def retrieval_settings(request: HtmxHttpRequest) -> HttpResponse:
    """The toggle and the sliders, saved as they move; htmx gets a one-line status.

    Only the controls moved on the page are saved (see RetrievalSettingsForm); the
    status then gives the page its new opening values, the ones it now shows.
    """
    form = RetrievalSettingsForm(request.POST, instance=memory_settings_get())
    status = 200
    if form.is_valid():
        try:
            settings = memory_settings_update(
                changes=form.settings_changes(), opened=form.settings_opened()
            )
        except SettingsChanged as exc:
            # Said with the stored value; the page takes it as what it opened with, so
            # moving the control again saves the owner's value knowingly.
            # The refused sliders go back to the stored value (QA: only their opening value
            # did, and moving another slider then saved the refused position unseen).
            message = _settings_changed_text(form, exc.stored)
            status = UNPROCESSABLE
            if not request.htmx:
                form = form.over_stored(exc.stored, message)
                return section(
                    request, PARTIAL, retrieval_context, status=status, settings_form=form
                )
            form.add_error(None, message)
            shown = RetrievalSettingsForm(initial={**form.settings_opened(), **exc.stored})
            context = {
                "settings": None,
                "form": form,
                "shown_form": shown,
                "refused": shown.sliders_of(exc.stored),
            }
            return render(request, STATUS_TEMPLATE, context, status=status)
        if not request.htmx:
            return redirect(section_url("auto-retrieval"))
        shown = RetrievalSettingsForm(initial=form.cleaned_data)
        context = {"settings": settings, "form": form, "shown_form": shown}
    else:
        status = UNPROCESSABLE
        if not request.htmx:
            return section(request, PARTIAL, retrieval_context, status=status, settings_form=form)
        context = {"settings": None, "form": form}
    return render(request, STATUS_TEMPLATE, context, status=status)


def _settings_changed_text(form: RetrievalSettingsForm, stored: dict[str, object]) -> str:
    said = []
    for name, value in stored.items():
        if isinstance(value, bool):
            value = "activé" if value else "désactivé"
        elif isinstance(value, float):
            value = floatformat(value, 2)  # as the status line says a score
        said.append(SETTING_CHANGED_MESSAGE.format(label=form.fields[name].label, value=value))
    return " ".join([*said, SETTINGS_CHANGED_END])


# The query parameter of the preview run again after a topic forget, its undo or erasure.
PREVIEW_AGAIN = "again"


@staff_required
@require_GET
def retrieval_preview(request: HtmxHttpRequest) -> HttpResponse:
    if not request.htmx:
        return section(request, PARTIAL, retrieval_context)
    if request.GET.get(PREVIEW_AGAIN) and not request.GET.get("message", "").strip():
        # The preview run again after a topic forget (_retrieval.html): none was shown.
        return HttpResponse(status=204)
    context = _preview_context(request)
    status = UNPROCESSABLE if context["preview_form"].errors else 200
    return render(request, "dashboard/memory/_retrieval_preview.html", context, status=status)
