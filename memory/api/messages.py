"""POST /api/memory/messages: an outside agent records one message or a batch."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.fields import (
    JSON_OBJECT_EXPECTED,
    DateTimeInRangeField,
    JsonListField,
    StrictBooleanField,
    StrictCharField,
)
from memory.api.serializers import StrictInputSerializer
from memory.api.views import ERRORS, ErrorSerializer, MemoryApi
from memory.models import MessageRole, MessageSource
from memory.services.messages import BAD_CHANNEL, CONTENT_MAX_CHARS, EMPTY_MESSAGE, channel_validate
from memory.services.messages_record import (
    ITEM_INVALID,
    IdempotencyKeyReused,
    MessageDraft,
    item_errors_text,
    message_role_source,
    message_timestamp_validate,
    messages_record,
)

BATCH_MAX = 500
# Stored as "<account id>:<key>" in a 128-character column.
IDEMPOTENCY_KEY_MAX = 100
NOT_AN_OBJECT = "Chaque message doit être un objet JSON."
BODY_NOT_AN_OBJECT = JSON_OBJECT_EXPECTED  # the one wording (memory.api.fields)


class IdempotencyConflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "idempotency_key_reused"


KEY_HELP = (
    "Clé unique de cet envoi : un envoi répété avec la même clé renvoie les mêmes ids et "
    "n'enregistre rien."
)


def idempotency_key_field(help_text: str = KEY_HELP):
    return StrictCharField(
        max_length=IDEMPOTENCY_KEY_MAX, required=False, default="", help_text=help_text
    )


class MessageInputSerializer(StrictInputSerializer):
    """One message. ``role`` and ``source`` may be given alone: the other follows."""

    channel = StrictCharField(max_length=64, help_text="Le canal, ex. whatsapp.")
    content = StrictCharField(max_length=CONTENT_MAX_CHARS, trim_whitespace=False)
    role = serializers.ChoiceField(choices=MessageRole.choices, required=False)
    source = serializers.ChoiceField(
        choices=MessageSource.choices,
        required=False,
        help_text="user, system ou tool (le résultat d'un outil, lu par l'extraction des faits).",
    )
    author = StrictCharField(max_length=128, required=False, default="", allow_blank=True)
    timestamp = DateTimeInRangeField(
        required=False,
        default=None,
        help_text="Date d'origine (imports) : un message oublié ou effacé ici, envoyé à sa date "
        "d'origine, est refusé, quel que soit l'auteur indiqué. Absente : maintenant.",
    )
    memory_excluded = StrictBooleanField(
        default=False,
        help_text="true pour une demande d'oubli et sa réponse : enregistrées, mais jamais dans "
        "l'historique, l'index, la recherche ni l'extraction (une réponse exclue exclut son "
        "échange).",
    )

    def validate_channel(self, value: str) -> str:
        try:
            return channel_validate(value)
        except DjangoValidationError:
            raise serializers.ValidationError(BAD_CHANNEL) from None

    def validate_content(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError(EMPTY_MESSAGE)
        return value

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        try:
            attrs["role"], attrs["source"] = message_role_source(
                role=attrs.get("role"), source=attrs.get("source")
            )
            message_timestamp_validate(attrs["timestamp"])
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs

    def draft(self) -> MessageDraft:
        data = self.validated_data
        return MessageDraft(
            channel=data["channel"],
            content=data["content"],
            role=data["role"],
            source=data["source"],
            author=data["author"],
            created_at=data["timestamp"],
            memory_excluded=data["memory_excluded"],
        )


@extend_schema_field(MessageInputSerializer(many=True))
class MessageItemsField(JsonListField):
    """The raw items of a batch: each is validated by MessageInputSerializer, with its index."""

    child = serializers.JSONField(allow_null=True)  # null is said as any item no object is


class SingleMessageInputSerializer(MessageInputSerializer):
    """One message, with the idempotency key of its sending."""

    idempotency_key = idempotency_key_field()


class MessageBatchInputSerializer(StrictInputSerializer):
    """Messages in order, recorded all or none, with the idempotency key of their sending."""

    messages = MessageItemsField(
        min_length=1,
        max_length=BATCH_MAX,
        error_messages={"min_length": "Au moins un message est attendu."},
        help_text="Les messages dans l'ordre; tous enregistrés ou aucun.",
    )
    idempotency_key = idempotency_key_field()

    def validate_messages(self, items: list) -> list[MessageDraft]:
        drafts = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                errors = {"non_field_errors": [NOT_AN_OBJECT]}
            else:
                one = MessageInputSerializer(data=item)
                if one.is_valid():
                    drafts.append(one.draft())
                    continue
                errors = one.errors
            detail = ITEM_INVALID.format(index=index, detail=item_errors_text(errors))
            raise serializers.ValidationError({str(index): [detail]})
        return drafts


class MessagesRecordedSerializer(serializers.Serializer):
    message_ids = JsonListField(child=serializers.IntegerField())
    count = serializers.IntegerField()
    replayed = serializers.BooleanField(
        help_text="true : cette clé d'idempotence avait déjà servi, rien n'a été enregistré."
    )


def idempotency_key_scoped(request: Request, key: str) -> str:
    """The key as stored: each account (an agent's token, the owner) has its own keys."""
    return f"{request.user.pk}:{key}" if key else ""


def body_object(data) -> dict:
    """The request's JSON object; a French 400 for ``null``, a list or a scalar."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": [BODY_NOT_AN_OBJECT]})
    return data


def messages_input(data) -> tuple[list[MessageDraft], str]:
    """The drafts and the idempotency key of a body (one message, or ``{"messages": [...]}``)."""
    if "messages" in body_object(data):
        body = MessageBatchInputSerializer(data=data)
        body.is_valid(raise_exception=True)
        return body.validated_data["messages"], body.validated_data["idempotency_key"]
    body = SingleMessageInputSerializer(data=data)
    body.is_valid(raise_exception=True)
    return [body.draft()], body.validated_data["idempotency_key"]


class MessagesRecordApi(MemoryApi):
    name = "Messages"

    @extend_schema(
        operation_id="messages_record",
        summary="Enregistrer des messages",
        description=(
            'Pour un agent extérieur : enregistre un message, ou un lot ``{"messages": [...]}`` '
            "(tout ou rien : un message invalide refuse le lot en nommant son index). Chaque "
            "message est indexé comme ceux de notre agent; un message ``assistant`` clôt "
            "l'échange (les messages user depuis la réponse précédente, et les résultats "
            "d'outils) : l'extraction des faits et la compaction sont alors programmées. Une "
            "réponse suit le dernier message user : oublié, elle est prise par le même oubli; "
            "effacé, elle est refusée. 201 avec les ids; 200 et les mêmes ids si la clé "
            "d'idempotence a déjà servi."
        ),
        request=PolymorphicProxySerializer(
            component_name="MessagesRecordInput",
            serializers=[SingleMessageInputSerializer, MessageBatchInputSerializer],
            resource_type_field_name=None,
        ),
        responses={
            201: MessagesRecordedSerializer,
            200: MessagesRecordedSerializer,
            **ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="Clé d'idempotence déjà utilisée pour d'autres messages.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        drafts, key = messages_input(request.data)
        try:
            recording = messages_record(
                drafts=drafts, idempotency_key=idempotency_key_scoped(request, key)
            )
        except IdempotencyKeyReused as exc:
            raise IdempotencyConflict(str(exc)) from None
        body = {
            "message_ids": recording.message_ids,
            "count": len(recording.message_ids),
            "replayed": recording.replayed,
        }
        return Response(
            MessagesRecordedSerializer(body).data,
            status=status.HTTP_200_OK if recording.replayed else status.HTTP_201_CREATED,
        )
