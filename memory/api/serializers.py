"""Serializers of the memory API: they validate and represent, never persist.

Numeric ranges come from the models' validators (ModelSerializer maps
Min/MaxValueValidator to min_value/max_value, and FactInput reads them with
model_field_range), so the API, the admin and the dashboard refuse the same
values.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.settings import api_settings

from memory.api.fact_kinds import fact_kind_check
from memory.api.fields import (
    JSON_OBJECT_EXPECTED,
    ApiModelSerializer,
    FrenchFloatField,
    JsonListField,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
)
from memory.exceptions import InvalidTTL
from memory.models import (
    FACT_VALUE_MAX_CHARS,
    SUBJECT_MAX_CHARS,
    SUBJECTS_MAX,
    Fact,
    FactKind,
    FactRevision,
    FactSource,
    GoalCategory,
    MemoryRetrieval,
    MemorySettings,
    MemoryType,
    SelfCategory,
    validate_fact_key,
)
from memory.models.rules import validate_fact_channel
from memory.selectors import FACTS_RECENT_MAX
from memory.services.fact_ownership import owner_kept_answer
from memory.services.fact_revisions import fact_version
from memory.services.search import QUERY_MAX_CHARS
from memory.services.settings import EDITABLE_FIELDS, model_field_range
from memory.services.ttl import parse_ttl

# Caps on what one request may carry (the body size itself is capped by the parsers).
VALUE_MAX_CHARS = FACT_VALUE_MAX_CHARS


TTL_MAX_CHARS = 20
NOTE_PATH_MAX_CHARS = 500
CONTEXT_NOTES_MAX = 50
UNKNOWN_FIELD_MESSAGE = "Champ inconnu."
READ_ONLY_MESSAGE = "Ce champ est en lecture seule."
IMPORTANCE_REQUIRED_MESSAGE = "Donnez une importance entre 0 et 1."

_IMPORTANCE_MIN, _IMPORTANCE_MAX = model_field_range(Fact, "importance")
_KEY_MAX = Fact._meta.get_field("key").max_length
_CHANNEL_MAX = Fact._meta.get_field("channel").max_length


def _unknown_fields(serializer: serializers.Serializer, data) -> dict[str, list[str]]:
    """Each field of ``data`` the serializer does not write (unknown or read-only), named
    with its error."""
    if not isinstance(data, Mapping):
        return {}
    writable = {name for name, field in serializer.fields.items() if not field.read_only}
    writable |= set(getattr(serializer, "also_read", ()))
    return {
        name: [READ_ONLY_MESSAGE if name in serializer.fields else UNKNOWN_FIELD_MESSAGE]
        for name in sorted(set(data) - writable)
    }


class UnknownFieldsRefused:
    """Serializer mixin: a field it does not write is a 400, never silently ignored (typos),
    named beside the other fields' errors (« topik » unknown and « topic » missing, in one
    answer); a body that is no JSON object is said so in JSON's words."""

    default_error_messages = {"invalid": JSON_OBJECT_EXPECTED}

    def to_internal_value(self, data):
        unknown = _unknown_fields(self, data)
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


class StrictInputSerializer(UnknownFieldsRefused, serializers.Serializer):
    """Refuses fields it does not know instead of silently ignoring them (typos)."""


BODY_UNREAD_MESSAGE = (
    "Cette requête ne lit aucun corps : envoyez-la sans corps, ou avec un objet JSON vide."
)


class NoBodySerializer(StrictInputSerializer):
    """The body of a write that reads none (MemoryApi.bodiless_methods): every field is
    unknown, and a body that is no object is said unwanted."""

    default_error_messages = {"invalid": BODY_UNREAD_MESSAGE}


class QuerySerializer(StrictInputSerializer):
    """A query string: its own parameters, and DRF's renderer choice (``?format=json``)."""

    also_read: tuple[str, ...] = (api_settings.URL_FORMAT_OVERRIDE,)


class PagedQuerySerializer(QuerySerializer):
    """A paginated list's query: also the page's parameters (MemoryPagination)."""

    also_read = (*QuerySerializer.also_read, "page", "page_size")


def _validate_ttl(value: str | None) -> str | None:
    try:
        parse_ttl(value)
    except InvalidTTL as exc:
        raise serializers.ValidationError(str(exc)) from None
    return value


# --- Facts ---------------------------------------------------------------------


class FactOutputSerializer(ApiModelSerializer):
    is_expired = serializers.BooleanField(read_only=True)
    # The version an edit is made on (fact_version), the ETag's value; not the row's indexing
    # counter (Fact.version), which this field's name hides from the API.
    version = serializers.SerializerMethodField(
        help_text="La version du fait (l'ETag sans ses guillemets) : change à chaque écriture. "
        "À renvoyer dans If-Match (API) ou ``version`` (outil MCP remember)."
    )

    class Meta:
        model = Fact
        fields = (
            "key",
            "value",
            "memory_type",
            "importance",
            "subjects",
            "source",
            "channel",
            "expires_at",
            "is_expired",
            "created_at",
            "updated_at",
            "last_accessed_at",
            "access_count",
            "forgotten",
            "forgotten_at",
            "index_state",
            "indexed_at",
            "kind",
            "category",
            "version",
        )
        read_only_fields = fields

    def get_version(self, fact: Fact) -> str:
        return fact_version(fact)


class FactWrittenSerializer(FactOutputSerializer):
    """The fact a write left, saying when the value it stated (context ``stated_value``) or
    its importance or type (``stated_fields``) met what the owner set and was not applied,
    as the agent's tools do (owner_kept_answer)."""

    # Filled by to_representation. Not read-only: drf-spectacular marks those required.
    owner_kept = StrictBooleanField(
        required=False,
        help_text="Présent (true) seulement quand la valeur, l'importance ou le type donnés "
        "n'ont pas été enregistrés : le propriétaire a fixé les siens, qui restent.",
    )
    message = StrictCharField(
        required=False, help_text="Avec ``owner_kept`` : ce qui est gardé, en français."
    )

    class Meta(FactOutputSerializer.Meta):
        fields = (*FactOutputSerializer.Meta.fields, "owner_kept", "message")

    def to_representation(self, instance: Fact) -> dict:
        data = FactOutputSerializer(instance, context=self.context).data
        kept = owner_kept_answer(
            instance, self.context.get("stated_value"), self.context.get("stated_fields")
        )
        return {**data, **kept}


def _subject_shows_something(value: str) -> None:
    """A subject of invisible characters is blank (QA: a badge with nothing in it), refused
    as DRF refuses one of spaces."""
    from memory.models.rules import shows_nothing

    if shows_nothing(value):
        raise serializers.ValidationError(serializers.CharField.default_error_messages["blank"])


class _FactFieldsSerializer(StrictInputSerializer):
    value = StrictCharField(max_length=VALUE_MAX_CHARS)
    # Absent fields are not stated: a new fact gets the defaults, a restated one keeps its own.
    memory_type = serializers.ChoiceField(
        choices=MemoryType.choices,
        required=False,
        help_text="Absent : « fact » pour un nouveau fait.",
    )
    importance = FrenchFloatField(
        required=False,
        allow_null=True,
        min_value=_IMPORTANCE_MIN,
        max_value=_IMPORTANCE_MAX,
        help_text="0 à 1; absent: l'importance par défaut du type.",
    )
    subjects = JsonListField(
        child=StrictCharField(max_length=SUBJECT_MAX_CHARS, validators=[_subject_shows_something]),
        max_length=SUBJECTS_MAX,
        required=False,
    )
    channel = StrictCharField(
        max_length=_CHANNEL_MAX,
        required=False,
        allow_blank=True,
        validators=[validate_fact_channel],  # the model's (a Django error: DRF says it)
    )
    ttl = StrictCharField(
        max_length=TTL_MAX_CHARS,
        required=False,
        allow_blank=True,
        allow_null=True,
        help_text='Durée de vie : "30m", "1h", "7d", "2w"; vide ou null : pour toujours; '
        "absente : inchangée.",
    )

    def validate_ttl(self, value):
        # Given as null or "": stated "forever" (absent: not stated).
        return _validate_ttl(value) or ""


class FactInputSerializer(_FactFieldsSerializer):
    """Body of POST /facts: a new fact, or a new value for an existing key.

    With ``kind`` self or goal: one of the agent's memories about itself or its
    goals (``category`` and ``value`` only; its key is derived, dedup applies).
    """

    key = StrictCharField(
        max_length=_KEY_MAX, required=False, help_text="Obligatoire pour kind=owner (défaut)."
    )
    source = serializers.ChoiceField(choices=FactSource.choices, required=False)
    # No default: absent, it is not in validated_data (the MCP ``remember`` tool reuses
    # this serializer for owner facts only).
    kind = serializers.ChoiceField(
        choices=FactKind.choices,
        required=False,
        help_text="owner (défaut) : un fait du propriétaire ; self / goal : l'agent lui-même.",
    )
    category = serializers.ChoiceField(
        choices=[*SelfCategory.choices, *GoalCategory.choices],
        required=False,
        help_text="Pour kind=self : context, capability, limitation, preference, relation ; "
        "pour kind=goal : capability_request, understanding, connection.",
    )

    def validate(self, attrs):
        return fact_kind_check(super().validate(attrs), self.initial_data)

    def validate_key(self, value: str) -> str:
        value = value.strip()
        try:
            validate_fact_key(value)  # the one key rule, the model's
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value


class FactPatchSerializer(_FactFieldsSerializer):
    """Body of PATCH /facts/<key>: only the fields given change."""

    # Not nullable here (the schema said it was, and null was refused): a fact keeps one.
    importance = FrenchFloatField(
        required=False,
        min_value=_IMPORTANCE_MIN,
        max_value=_IMPORTANCE_MAX,
        error_messages={"null": IMPORTANCE_REQUIRED_MESSAGE},
        help_text="0 à 1.",
    )

    def __init__(self, *args, **kwargs):
        # Partial: absent fields are neither required nor given their defaults.
        kwargs.setdefault("partial", True)
        super().__init__(*args, **kwargs)


class FactRevisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = FactRevision
        fields = ("actor", "reason", "old_value", "new_value", "changes", "note", "created_at")
        read_only_fields = fields


class FactListQuerySerializer(PagedQuerySerializer):
    search = StrictCharField(max_length=QUERY_MAX_CHARS, required=False, default="")
    kind = serializers.ChoiceField(
        choices=FactKind.choices,
        required=False,
        default=FactKind.OWNER,
        help_text="owner (défaut) : les faits du propriétaire ; self / goal : les souvenirs "
        "de l'agent sur lui-même / ses objectifs.",
    )
    include_forgotten = StrictBooleanField(required=False, default=False)
    include_expired = StrictBooleanField(required=False, default=False)


class FactRecentQuerySerializer(QuerySerializer):
    limit = StrictIntegerField(
        min_value=1, max_value=FACTS_RECENT_MAX, default=10, help_text="Combien de faits (1 à 50)."
    )


# --- Settings ------------------------------------------------------------------


class MemorySettingsSerializer(UnknownFieldsRefused, ApiModelSerializer):
    """GET and PATCH /settings; ranges are the model's validators."""

    obsidian_context_notes = JsonListField(
        child=StrictCharField(max_length=NOTE_PATH_MAX_CHARS),
        max_length=CONTEXT_NOTES_MAX,
        required=False,
    )

    class Meta:
        model = MemorySettings
        fields = (*EDITABLE_FIELDS, "updated_at")
        read_only_fields = ("updated_at",)


# --- Retrieval logs ------------------------------------------------------------


class MemoryRetrievalSerializer(ApiModelSerializer):
    class Meta:
        model = MemoryRetrieval
        fields = (
            "id",
            "created_at",
            "channel",
            "message_preview",
            "memories",
            "notes",
            "tokens_added",
            "timings_ms",
            "total_ms",
            "failed_sources",
        )
        read_only_fields = fields


class RetrievalListQuerySerializer(PagedQuerySerializer):
    channel = StrictCharField(max_length=_CHANNEL_MAX, required=False, default="")
