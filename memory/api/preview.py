"""POST /api/memory/preview: what auto-retrieval would inject for a message, without the LLM."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.fields import FrenchFloatField, StrictCharField
from memory.api.serializers import StrictInputSerializer
from memory.api.views import ERRORS, MemoryApi
from memory.services.messages import BAD_CHANNEL, channel_validate
from memory.services.retrieval import auto_retrieve_preview

MESSAGE_MAX_CHARS = 4000


class PreviewInputSerializer(StrictInputSerializer):
    message = StrictCharField(max_length=MESSAGE_MAX_CHARS, trim_whitespace=True)
    channel = StrictCharField(max_length=64, default="mission_control")

    def validate_channel(self, value: str) -> str:
        try:
            return channel_validate(value)
        except Exception:
            raise serializers.ValidationError(BAD_CHANNEL) from None


class PreviewMemorySerializer(serializers.Serializer):
    id = StrictCharField()
    kind = StrictCharField()
    text = StrictCharField()
    type = StrictCharField(allow_blank=True)
    channel = StrictCharField(allow_blank=True)
    timestamp = StrictCharField()
    relative_time = StrictCharField()
    sources = serializers.DictField()
    score = FrenchFloatField(allow_null=True, required=False)


class PreviewNoteSerializer(serializers.Serializer):
    path = StrictCharField()
    source = StrictCharField()
    text = StrictCharField()


class PreviewOutputSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    core = PreviewMemorySerializer(many=True)
    memories = PreviewMemorySerializer(many=True)
    notes = PreviewNoteSerializer(many=True)
    prompt_block = StrictCharField(allow_blank=True)
    tokens_added = serializers.IntegerField()
    timings_ms = serializers.DictField(child=FrenchFloatField())
    failed_sources = serializers.DictField(child=StrictCharField())


class MemoryPreviewApi(MemoryApi):
    name = "Aperçu de l'auto-retrieval"

    @extend_schema(
        operation_id="memory_preview",
        summary="Aperçu de l'auto-retrieval",
        description=(
            "Ce que l'auto-retrieval injecterait pour ce message sur ce canal : souvenirs, notes, "
            "le bloc ajouté au prompt système et son coût estimé en tokens. Rien n'est journalisé "
            "et aucun LLM n'est appelé."
        ),
        request=PreviewInputSerializer,
        responses={200: PreviewOutputSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = PreviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = auto_retrieve_preview(
            message=data.validated_data["message"], channel=data.validated_data["channel"]
        )
        return Response(PreviewOutputSerializer(result).data)
