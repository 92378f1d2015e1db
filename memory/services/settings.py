"""Writing the memory settings (the single MemorySettings row).

The API's PATCH /api/memory/settings and the /memory page's toggles and
sliders both land here, so a change is validated and saved in one place.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import transaction

from memory.exceptions import MemoryServiceError, UnsafeNotePath
from memory.models import MemorySettings

# The knobs a user may change; id and updated_at are not theirs.
EDITABLE_FIELDS: tuple[str, ...] = (
    "auto_retrieve_enabled",
    "max_results",
    "min_score",
    "obsidian_context_enabled",
    "obsidian_context_notes",
    "obsidian_context_tag",
    "recent_window_hours",
    "search_min_score",
    "history_length",
    "reinjection_turns",
    "block_max_tokens",
    "forget_retention_days",
    "live_max_results",
)
UNKNOWN_FIELDS_MESSAGE = "Réglages inconnus : {names}."
SETTINGS_CHANGED_MESSAGE = (
    "Ces réglages ont changé depuis que vous les avez ouverts : {names}. Rien n'a été enregistré."
)


class SettingsChanged(MemoryServiceError):
    """A setting changed since the writer read the value it changes (memory_settings_update's
    ``opened``); ``stored``: those settings' values now."""

    def __init__(self, stored: dict[str, object]) -> None:
        super().__init__(SETTINGS_CHANGED_MESSAGE.format(names=", ".join(stored)))
        self.stored = stored


def settings_field_range(name: str) -> tuple[float | None, float | None]:
    """(minimum, maximum) of a numeric setting, read from the model's validators.

    Forms, serializers and templates take their ranges from here so the UI,
    the API and the admin can never disagree with the model.
    """
    return model_field_range(MemorySettings, name)


def model_field_range(model: type, name: str) -> tuple[float | None, float | None]:
    """(minimum, maximum) of a model field from its Min/MaxValueValidators."""
    low = high = None
    for validator in model._meta.get_field(name).validators:
        if isinstance(validator, MinValueValidator):
            low = validator.limit_value
        elif isinstance(validator, MaxValueValidator):
            high = validator.limit_value
    return low, high


def memory_settings_changes_clean(*, changes: Mapping[str, object]) -> dict[str, object]:
    """``changes`` as memory_settings_update stores them, or the error it would raise.

    The notes' rules are applied ("Profil" -> "Profil.md", "#makilab" ->
    "makilab"); ranges are left to the model. Forms call it in clean() so a
    refusal shows beside its field (the admin); memory_settings_update calls it
    too, so the rule has one home whoever writes.
    Raises ValidationError (a message per field), MemoryServiceError for a
    field that is not a setting.
    """
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise MemoryServiceError(UNKNOWN_FIELDS_MESSAGE.format(names=", ".join(unknown)))
    return _notes_rules_apply(dict(changes))


@transaction.atomic
def memory_settings_update(
    *, changes: Mapping[str, object], opened: Mapping[str, object] | None = None
) -> MemorySettings:
    """Apply ``changes`` to the settings row, validate the whole row, save it.

    ``changes`` holds only what its author changed: a field left out keeps the
    value stored now, even if another writer set it a moment ago. ``opened``: the
    values the author saw of the settings it changes (the /memory sliders as the page
    opened); a change over a value stored since (the API, the admin, another tab), to
    another value than it, is refused instead of undoing it unseen.
    Raises django.core.exceptions.ValidationError (a message per field) when a
    value is out of range, MemoryServiceError for a field that is not a setting,
    SettingsChanged (nothing saved) when a setting changed since ``opened``.
    """
    changes = memory_settings_changes_clean(changes=changes)
    if not changes:
        return MemorySettings.load()
    # The row as written now, under the write lock: a write landing meanwhile is seen.
    settings = MemorySettings.objects.select_for_update().get(pk=MemorySettings.load().pk)
    stored_since = {
        name: getattr(settings, name)
        for name, seen in (opened or {}).items()
        if name in changes
        and not values_same(getattr(settings, name), seen)
        and not values_same(getattr(settings, name), changes[name])
    }
    if stored_since:
        raise SettingsChanged(stored_since)
    for name, value in changes.items():
        setattr(settings, name, value)
    settings.full_clean()
    settings.save()
    return settings


def values_same(stored: object, other: object) -> bool:
    """A stored value against another (a setting, a fact's field as a form read it): numbers
    within float noise are the same, a boolean only its own value."""
    if isinstance(stored, bool) or isinstance(other, bool):
        return stored == other
    if isinstance(stored, int | float) and isinstance(other, int | float):
        return math.isclose(stored, other, abs_tol=1e-9)
    return stored == other


def _notes_rules_apply(changes: dict[str, object]) -> dict[str, object]:
    """Context notes and tag follow the notes service's rules, whoever writes them.

    Paths are normalised ("Profil" -> "Profil.md", each once) and the tag cleaned. A
    list the path rule refuses is left as given: the model's validator
    (_validate_context_notes, run by full_clean) refuses it with its message.
    """
    from memory.services.notes import context_tag_clean
    from memory.stores.notes import note_path_normalize

    if "obsidian_context_tag" in changes:
        changes["obsidian_context_tag"] = context_tag_clean(str(changes["obsidian_context_tag"]))
    if "obsidian_context_notes" not in changes:
        return changes
    notes = changes["obsidian_context_notes"]
    if notes is None:
        changes["obsidian_context_notes"] = []
    # Anything but a list of paths is left as given ("Profil" alone must not be read
    # letter by letter).
    elif isinstance(notes, list | tuple) and all(isinstance(raw, str) for raw in notes):
        with contextlib.suppress(UnsafeNotePath):
            changes["obsidian_context_notes"] = list(
                dict.fromkeys(note_path_normalize(raw) for raw in notes)
            )
    return changes
