"""The search's serializers (GET /search, the MCP search tool): its query and its hits."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from memory.api.fields import (
    DateTimeInRangeField,
    FrenchFloatField,
    StrictCharField,
    StrictIntegerField,
)
from memory.api.serializers import QuerySerializer
from memory.models import MemoryType
from memory.services.search import MAX_LIMIT, QUERY_MAX_CHARS, SEARCH_MODES

DEFAULT_SEARCH_LIMIT = 10


class SearchQuerySerializer(QuerySerializer):
    q = StrictCharField(max_length=QUERY_MAX_CHARS, help_text="Le texte cherché.")
    mode = serializers.ChoiceField(choices=SEARCH_MODES, default="semantic")
    limit = StrictIntegerField(
        min_value=1,
        default=DEFAULT_SEARCH_LIMIT,
        help_text=f"Nombre de résultats; au-delà de {MAX_LIMIT}, ramené à {MAX_LIMIT}.",
    )

    channel = StrictCharField(
        max_length=64, required=False, default="", help_text="Seulement ce canal."
    )
    memory_type = serializers.ChoiceField(
        choices=MemoryType.choices,
        required=False,
        allow_blank=True,
        default="",
        help_text="Seulement les faits de ce type.",
    )
    subjects = StrictCharField(
        max_length=500,
        required=False,
        default="",
        help_text="Sujets séparés par des virgules : les faits qui portent l'un d'eux.",
    )
    since = DateTimeInRangeField(
        required=False,
        default=None,
        input_formats=["iso-8601", "%Y-%m-%d"],
        help_text="À partir de cette date (incluse).",
    )
    until = DateTimeInRangeField(
        required=False,
        default=None,
        input_formats=["iso-8601", "%Y-%m-%d"],
        help_text="Avant cette date (exclue).",
    )

    def validate_limit(self, value: int) -> int:
        return min(value, MAX_LIMIT)

    def validate(self, attrs: dict) -> dict:
        from memory.services.search import search_filters_build

        attrs = super().validate(attrs)  # (an unknown parameter was refused before)
        try:
            attrs["filters"] = search_filters_build(
                channel=attrs["channel"],
                memory_type=attrs["memory_type"],
                subjects=attrs["subjects"],
                since=attrs["since"],
                until=attrs["until"],
            )
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        return attrs

    def filters(self):
        """The validated filters as the search service takes them (None: no filter)."""
        return self.validated_data["filters"]


class SearchHitSerializer(serializers.Serializer):
    id = StrictCharField()
    kind = serializers.ChoiceField(choices=["message", "exchange", "fact", "summary"])
    score = FrenchFloatField()
    channel = StrictCharField()
    date = serializers.DateTimeField(allow_null=True)
    excerpt = StrictCharField(help_text="200 caractères au plus.")
    type = StrictCharField(help_text="Rôle du message, type du fait, « summary ».")
    source = StrictCharField(
        help_text="Où il a été trouvé : conversations, knowledge, live (un salon observé), "
        "messages_fts, facts, summaries_fts, hybrid."
    )
    key = StrictCharField(help_text="La clé, pour un fait.")


class SearchResultSerializer(serializers.Serializer):
    query = StrictCharField()
    mode = StrictCharField()
    count = serializers.IntegerField()
    results = SearchHitSerializer(many=True)
