"""The "Notes Obsidian" section of /memory: the notes injected in every prompt (fixed
paths, then the notes tagged #<tag>), where they are read from, and their actions.

The notes service is imported lazily: when it is missing or its store is down, the
section says so in French and the rest of the page works.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from dashboard.auth import staff_required
from dashboard.forms import NotePathForm, NotesToggleForm, NoteTagForm
from dashboard.sections import (
    UNPROCESSABLE,
    HtmxHttpRequest,
    fragment,
    isolated_in,
    section,
    section_url,
)
from memory.exceptions import MemoryServiceError, StoreUnavailable, UnsafeNotePath
from memory.form_errors import form_errors_add
from memory.selectors import memory_settings_get
from memory.services.settings import memory_settings_update

logger = logging.getLogger(__name__)

PARTIAL = "dashboard/memory/_notes.html"
NOTES_UNAVAILABLE_MESSAGE = (
    "Notes Obsidian indisponibles : le module de notes n'est pas encore installé."
)
NOTE_SOURCE_LABELS = {"fixed": "fixe", "tag": "taguée", "tagged": "taguée"}


def _notes_module():
    try:
        notes = importlib.import_module("memory.services.notes")
    except ImportError as exc:
        logger.debug("notes service unavailable: %s", exc)
        return None
    return notes


def notes_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
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


@staff_required
@require_GET
def notes_section(request: HtmxHttpRequest) -> HttpResponse:
    return section(request, PARTIAL, notes_context)


def _notes_action(request: HtmxHttpRequest, form, action) -> HttpResponse:
    """Validate ``form``, run ``action(cleaned_data)`` (a service call), answer the section."""
    overrides: dict[str, Any] = {}
    status = 200
    if form.is_valid():
        try:
            overrides["notes_message"] = action(form.cleaned_data)
        except (ValidationError, MemoryServiceError) as exc:
            # These forms have one field: the refusal is about it.
            form_errors_add(form, exc, field=next(iter(form.fields)))
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
        return redirect(section_url("notes"))
    return section(request, PARTIAL, notes_context, status=status, **overrides)


def _notes_service_or_error():
    notes = _notes_module()
    if notes is None:
        raise StoreUnavailable(NOTES_UNAVAILABLE_MESSAGE)
    return notes


@staff_required
@require_POST
def note_add(request: HtmxHttpRequest) -> HttpResponse:
    def action(data):
        notes = _notes_service_or_error()
        before = memory_settings_get().obsidian_context_notes or []
        after = notes.context_note_add(path=data["path"]).obsidian_context_notes or []
        if len(after) == len(before):  # QA: a note already there was « ajoutée »
            message = f"La note « {data['path']} » est déjà dans le contexte."
            return isolated_in(message, data["path"])
        return isolated_in(f"Note « {data['path']} » ajoutée au contexte.", data["path"])

    return _notes_action(request, NotePathForm(request.POST), action)


@staff_required
@require_POST
def note_remove(request: HtmxHttpRequest) -> HttpResponse:
    def action(data):
        notes = _notes_service_or_error()
        before = memory_settings_get().obsidian_context_notes or []
        after = notes.context_note_remove(path=data["path"]).obsidian_context_notes or []
        if len(after) == len(before):  # QA: a note never there was « retirée »
            return isolated_in(
                f"La note « {data['path']} » n'était pas dans le contexte.", data["path"]
            )
        return isolated_in(f"Note « {data['path']} » retirée du contexte.", data["path"])

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
            if isinstance(exc, UnsafeNotePath):  # bad input, as an empty path is
                status = UNPROCESSABLE
    return fragment(request, "dashboard/memory/_note_preview.html", context, status=status)
