"""POST /api/memory/context: the pre-hook as a service for outside agents, logged."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.fields import JsonListField, StrictBooleanField, StrictCharField
from memory.api.messages import (
    CONTENT_MAX_CHARS,
    IdempotencyConflict,
    body_object,
    idempotency_key_field,
    idempotency_key_scoped,
)
from memory.api.preview import PreviewInputSerializer, PreviewOutputSerializer
from memory.api.views import ERRORS, ErrorSerializer, MemoryApi
from memory.services.context import message_context
from memory.services.messages_record import IdempotencyKeyReused

KEY_WITHOUT_RECORD = "Une clé d'idempotence ne sert qu'avec record: true."


class ContextInputSerializer(PreviewInputSerializer):
    """An incoming message on a channel; ``record`` also stores it."""

    # As long as /messages takes it (retrieval reads its first 4,000 characters).
    message = StrictCharField(max_length=CONTENT_MAX_CHARS, trim_whitespace=True)
    channel = StrictCharField(max_length=64, help_text="Le canal où le message arrive.")
    record = StrictBooleanField(
        default=False,
        help_text="true : enregistre aussi le message (comme POST /api/memory/messages).",
    )
    author = StrictCharField(max_length=128, required=False, default="", allow_blank=True)
    idempotency_key = idempotency_key_field()

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        if attrs["idempotency_key"] and not attrs["record"]:
            raise serializers.ValidationError({"idempotency_key": KEY_WITHOUT_RECORD})
        return attrs


class ContextOutputSerializer(PreviewOutputSerializer):
    retrieval_id = serializers.IntegerField(
        allow_null=True, help_text="La ligne du journal (GET /api/memory/retrievals)."
    )
    message_ids = JsonListField(
        child=serializers.IntegerField(), help_text="Le message enregistré (avec record)."
    )


class MemoryContextApi(MemoryApi):
    name = "Contexte d'un message"

    @extend_schema(
        operation_id="memory_context",
        summary="Contexte mémoire d'un message (pré-hook)",
        description=(
            "Pour un agent extérieur, avant son appel au LLM : le bloc délimité à mettre dans le "
            "prompt système (``prompt_block``, des données, jamais des instructions), les "
            "souvenirs et les notes qu'il contient (ids, scores) et les tokens ajoutés. "
            "Journalisé comme les appels de notre agent (GET /api/memory/retrievals), "
            "contrairement à /preview. Avec ``record: true`` le message est aussi enregistré "
            "et n'est jamais son propre contexte."
        ),
        request=ContextInputSerializer,
        responses={
            200: ContextOutputSerializer,
            **ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="Clé d'idempotence déjà utilisée pour un autre message.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        body = ContextInputSerializer(data=body_object(request.data))
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            context = message_context(
                message=data["message"],
                channel=data["channel"],
                record=data["record"],
                author=data["author"],
                idempotency_key=idempotency_key_scoped(request, data["idempotency_key"]),
            )
        except IdempotencyKeyReused as exc:
            raise IdempotencyConflict(str(exc)) from None
        output = {
            **PreviewOutputSerializer(context.retrieval).data,
            "retrieval_id": context.retrieval.retrieval_id,
            "message_ids": context.message_ids,
        }
        return Response(output, status=status.HTTP_200_OK)
