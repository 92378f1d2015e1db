"""Writing the memory settings (the single MemorySettings row).

The API's PATCH /api/memory/settings and the /memory page's toggles and
sliders both land here, so a change is validated and saved in one place.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import transaction

from memory.exceptions import MemoryServiceError
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
    "dedup_threshold",
    "search_min_score",
    "forget_min_score",
    "history_length",
    "reinjection_turns",
)
UNKNOWN_FIELDS_MESSAGE = "Réglages inconnus : {names}."


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


@transaction.atomic
def memory_settings_update(*, changes: Mapping[str, object]) -> MemorySettings:
    """Apply ``changes`` to the settings row, validate the whole row, save it.

    Raises django.core.exceptions.ValidationError (a message per field) when a
    value is out of range, MemoryServiceError for a field that is not a setting.
    """
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise MemoryServiceError(UNKNOWN_FIELDS_MESSAGE.format(names=", ".join(unknown)))
    settings = MemorySettings.load()
    if not changes:
        return settings
    for name, value in changes.items():
        setattr(settings, name, value)
    settings.full_clean()
    settings.save()
    return settings
