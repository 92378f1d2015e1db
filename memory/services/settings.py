"""Writing the memory settings (the single MemorySettings row).

The API's PATCH /api/memory/settings and the /memory page's toggles and
sliders both land here, so a change is validated and saved in one place.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError
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
    "search_min_score",
    "history_length",
    "reinjection_turns",
    "block_max_tokens",
    "forget_retention_days",
    "live_max_results",
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
def memory_settings_update(*, changes: Mapping[str, object]) -> MemorySettings:
    """Apply ``changes`` to the settings row, validate the whole row, save it.

    ``changes`` holds only what its author changed: a field left out keeps the
    value stored now, even if another writer set it a moment ago.
    Raises django.core.exceptions.ValidationError (a message per field) when a
    value is out of range, MemoryServiceError for a field that is not a setting.
    """
    changes = memory_settings_changes_clean(changes=changes)
    settings = MemorySettings.load()
    if not changes:
        return settings
    for name, value in changes.items():
        setattr(settings, name, value)
    settings.full_clean()
    settings.save()
    return settings


def _notes_rules_apply(changes: dict[str, object]) -> dict[str, object]:
    """Context notes and tag follow the notes service's rules, whoever writes them.

    Paths are normalised ("Profil" -> "Profil.md") and checked, the tag is
    cleaned; without the notes module (not installed yet) values go as given,
    checked by the model only.
    """
    if "obsidian_context_notes" not in changes and "obsidian_context_tag" not in changes:
        return changes
    try:
        from memory.services.notes import MAX_FIXED_NOTES, MSG_TOO_MANY_NOTES, context_tag_clean
        from memory.stores.notes import note_path_normalize
    except ImportError:
        return changes
    if "obsidian_context_tag" in changes:
        changes["obsidian_context_tag"] = context_tag_clean(str(changes["obsidian_context_tag"]))
    notes = changes.get("obsidian_context_notes")
    if "obsidian_context_notes" in changes and notes is None:
        notes = []
    # Anything but a list of paths is left as given ("Profil" alone must not be read
    # letter by letter): the model's validator refuses it.
    if isinstance(notes, list | tuple) and all(isinstance(raw, str) for raw in notes):
        paths: dict[str, None] = {}
        errors: list[str] = []
        for raw in notes:
            try:
                paths.setdefault(note_path_normalize(str(raw)), None)
            except MemoryServiceError as exc:
                errors.append(f"{raw} : {exc}")
        if len(paths) > MAX_FIXED_NOTES:
            errors.append(MSG_TOO_MANY_NOTES)
        if errors:
            raise ValidationError({"obsidian_context_notes": errors})
        changes["obsidian_context_notes"] = list(paths)
    return changes
