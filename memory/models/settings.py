"""The tunable knobs: the memory's settings row and each channel's settings."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from memory.exceptions import UnsafeNotePath
from memory.models.rules import LocalizedMaxValueValidator, LocalizedMinValueValidator
from memory.stores.compiled import CompiledRead
from memory.stores.notes import note_path_normalize

MAX_FIXED_NOTES = 20
MSG_TOO_MANY_NOTES = f"Pas plus de {MAX_FIXED_NOTES} notes de contexte fixes."
MSG_CONTEXT_NOTES_NOT_PATHS = "Les notes de contexte fixes doivent être une liste de chemins."


def _validate_context_notes(value: object) -> None:
    """The one rule of the fixed context notes (model, admin, /memory, API): a list of
    at most MAX_FIXED_NOTES paths, each one note_path_normalize accepts."""
    if not isinstance(value, list) or not all(isinstance(path, str) for path in value):
        raise ValidationError(MSG_CONTEXT_NOTES_NOT_PATHS)
    errors: list[str] = []
    for path in value:
        try:
            note_path_normalize(path)
        except UnsafeNotePath as exc:
            errors.append(f"{path} : {exc}")
    if len(value) > MAX_FIXED_NOTES:
        errors.append(MSG_TOO_MANY_NOTES)
    if errors:
        raise ValidationError(errors)


class MemorySettings(models.Model):
    """The single row of tunable knobs (table memory_settings).

    Ranges are the UI's: the model validates them, so the admin, the API and
    the /memory page all refuse the same values.
    """

    SINGLETON_ID = 1

    auto_retrieve_enabled = models.BooleanField("auto-retrieval activé", default=True)
    max_results = models.PositiveSmallIntegerField(
        "nombre maximum de souvenirs",
        default=4,
        validators=[LocalizedMinValueValidator(1), LocalizedMaxValueValidator(10)],
    )
    min_score = models.FloatField(
        "score minimum",
        default=0.5,
        validators=[LocalizedMinValueValidator(0.3), LocalizedMaxValueValidator(0.8)],
    )
    obsidian_context_enabled = models.BooleanField("notes Obsidian en contexte", default=True)
    obsidian_context_notes = models.JSONField(
        "notes de contexte fixes", default=list, blank=True, validators=[_validate_context_notes]
    )
    obsidian_context_tag = models.CharField("tag de contexte", max_length=100, default="makilab")
    recent_window_hours = models.PositiveSmallIntegerField(
        "fenêtre récente (heures)",
        default=6,
        validators=[LocalizedMinValueValidator(1), LocalizedMaxValueValidator(168)],
    )
    search_min_score = models.FloatField(
        "score minimum des recherches",
        default=0.3,
        validators=[LocalizedMinValueValidator(0.0), LocalizedMaxValueValidator(1.0)],
    )
    block_max_tokens = models.PositiveIntegerField(
        "tokens maximum du bloc mémoire",
        default=1000,
        validators=[LocalizedMinValueValidator(100), LocalizedMaxValueValidator(8000)],
    )
    forget_retention_days = models.PositiveSmallIntegerField(
        "jours pendant lesquels un oubli est annulable",
        default=7,
        validators=[LocalizedMinValueValidator(0), LocalizedMaxValueValidator(90)],
    )
    history_length = models.PositiveSmallIntegerField(
        "longueur de l'historique",
        default=20,
        validators=[LocalizedMinValueValidator(1), LocalizedMaxValueValidator(200)],
    )
    reinjection_turns = models.PositiveSmallIntegerField(
        "tours pendant lesquels un souvenir retrouvé reste dans le prompt",
        default=3,
        validators=[LocalizedMinValueValidator(0), LocalizedMaxValueValidator(50)],
    )
    live_max_results = models.PositiveSmallIntegerField(
        "extraits maximum des salons observés",
        default=10,
        validators=[LocalizedMinValueValidator(0), LocalizedMaxValueValidator(20)],
    )
    updated_at = models.DateTimeField("modifié le", auto_now=True)

    class Meta:
        db_table = "memory_settings"
        verbose_name = "réglages de la mémoire"
        verbose_name_plural = "réglages de la mémoire"
        constraints = [
            models.CheckConstraint(condition=models.Q(id=1), name="memory_settings_single_row"),
        ]

    def __str__(self) -> str:
        return "Réglages de la mémoire"

    def save(self, *args, **kwargs) -> None:
        self.pk = self.SINGLETON_ID
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("Les réglages de la mémoire ne peuvent pas être supprimés.")

    @classmethod
    def load(cls) -> MemorySettings:
        """The settings row (created with the defaults the first time).

        Read on every message: the SQL is compiled once (memory.stores.compiled).
        """
        found = _SETTINGS_ROW.instances()
        if found:
            return found[0]
        obj, _ = cls.objects.get_or_create(pk=cls.SINGLETON_ID)
        return obj


_SETTINGS_ROW = CompiledRead(
    lambda _now: MemorySettings.objects.filter(pk=MemorySettings.SINGLETON_ID)
)


CHANNEL_OBSERVED_HELP = (
    "Les messages d'un salon observé sont gardés et cherchés par l'auto-retrieval "
    "(collection live) ; l'agent n'y répond pas. Le digest en tire les faits durables."
)


class ChannelSettings(models.Model):
    """Per-channel settings (table memory_channels): whether the channel is observed."""

    channel = models.CharField("canal", max_length=64, unique=True)
    observed = models.BooleanField("observé", default=False, help_text=CHANNEL_OBSERVED_HELP)
    updated_at = models.DateTimeField("modifié le", auto_now=True)

    class Meta:
        db_table = "memory_channels"
        ordering = ["channel"]
        verbose_name = "réglages d'un canal"
        verbose_name_plural = "réglages des canaux"

    def __str__(self) -> str:
        return f"{self.channel} ({'observé' if self.observed else 'normal'})"
