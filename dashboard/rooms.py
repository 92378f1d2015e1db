"""The "Salons observés" section of /memory: which channels are observed, the live
memory, the last and next digest, and the button that forces one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from dashboard.auth import staff_required
from dashboard.sections import isolated_in, section
from memory.api.fields import BOOLEAN_EXPECTED, StrictBooleanField
from memory.services.channels import channel_settings_set
from memory.services.digest import digest_request, digest_status_get

PARTIAL = "dashboard/memory/_rooms.html"
DIGEST_REQUESTED = "Digest demandé : il tourne en tâche de fond."
ROOM_OBSERVED = "Le salon « {channel} » est observé."
ROOM_RELEASED = "Le salon « {channel} » n'est plus observé."


# The page's preview form has a « channel » too: ids of their own (QA: two id_channel, the
# rooms' input without its label).
ROOM_ID = "id_room_%s"


class RoomForm(forms.Form):
    channel = forms.CharField(label="Salon à observer", max_length=64)
    # The page's own forms send nothing (observe) or « false » (stop observing).
    observed = forms.CharField(label="Observé", required=False, strip=False)

    def clean_observed(self) -> bool:
        """The words a form carries for yes or no, as the API reads them: anything but the
        exact « false » observed the room (« 0 », « no », « maybe »)."""
        if "observed" not in self.data:
            return True
        said = StrictBooleanField.WORDS.get(self.cleaned_data["observed"].strip().lower())
        if said is None:
            raise ValidationError(BOOLEAN_EXPECTED)
        return said


def rooms_context(request: HttpRequest, **overrides: Any) -> dict[str, Any]:
    return {
        "rooms_form": RoomForm(auto_id=ROOM_ID),
        "rooms_status": digest_status_get(),
        "rooms_message": "",
        **overrides,
    }


def _render(request: HttpRequest, *, status: int = 200, **overrides: Any) -> HttpResponse:
    return section(request, PARTIAL, rooms_context, status=status, **overrides)


@staff_required
@require_GET
def rooms_section(request: HttpRequest) -> HttpResponse:
    return _render(request)


@staff_required
@require_POST
def room_observe(request: HttpRequest) -> HttpResponse:
    form = RoomForm(request.POST, auto_id=ROOM_ID)
    if form.is_valid():
        observed = form.cleaned_data["observed"]
        try:
            room = channel_settings_set(channel=form.cleaned_data["channel"], observed=observed)
        except ValidationError as exc:
            form.add_error("channel", " ".join(exc.messages))
        else:
            template = ROOM_OBSERVED if observed else ROOM_RELEASED
            # The owner's name for the room, bidi-isolated in the sentence (an Arabic or
            # Hebrew name would otherwise reorder the words around it).
            message = isolated_in(template.format(channel=room.channel), room.channel)
            return _render(request, rooms_message=message)
    return _render(request, status=422, rooms_form=form)


@staff_required
@require_POST
def digest_now(request: HttpRequest) -> HttpResponse:
    digest_request()
    return _render(request, rooms_message=DIGEST_REQUESTED)
