"""The chat API's input and output: validation and representation only."""

from __future__ import annotations

from rest_framework import serializers

from memory.api.fields import FrenchFloatField, StrictCharField
from memory.api.messages import idempotency_key_field
from memory.api.serializers import StrictInputSerializer
from memory.models import MessageSource
from memory.models.rules import CHANNEL_MAX, validate_channel

MAX_MESSAGE_CHARS = 20_000


class ChatInputSerializer(StrictInputSerializer):
    channel = StrictCharField(
        max_length=CHANNEL_MAX,
        validators=[validate_channel],  # the channels' one rule (a Django error: DRF says it)
        help_text="Le canal de la conversation, ex. mission_control ou whatsapp.",
    )
    message = StrictCharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=True)
    source = serializers.ChoiceField(
        choices=MessageSource.choices,
        default=MessageSource.USER,
        help_text="user (défaut), system (pas d'auto-retrieval ni d'extraction) ou tool.",
    )
    author = StrictCharField(max_length=128, required=False, allow_blank=True, default="")
    idempotency_key = idempotency_key_field(
        help_text="Clé unique de cet envoi : renvoyé avec la même clé (après une réponse "
        "perdue, une panne du LLM), le message n'est ni enregistré ni payé deux fois ; la même "
        "réponse revient (``replayed``), ou le message enregistré reçoit sa réponse.",
    )

    def validate_message(self, value: str) -> str:
        return message_shows_something(value)


def message_shows_something(value: str) -> str:
    """A message of characters nobody sees only (U+200B, U+FEFF…) is blank, refused as one
    of spaces is (QA: it was taken, then injected by auto-retrieval)."""
    from django.core.exceptions import ValidationError

    from memory.models.rules import shows_nothing

    if shows_nothing(value):
        raise ValidationError(serializers.CharField.default_error_messages["blank"])
    return value


class RetrievedMemorySerializer(serializers.Serializer):
    id = StrictCharField()
    kind = StrictCharField(required=False)
    text = StrictCharField(required=False)
    type = StrictCharField(required=False, allow_blank=True)
    channel = StrictCharField(required=False, allow_blank=True)
    relative_time = StrictCharField(required=False, allow_blank=True)
    score = FrenchFloatField(required=False, allow_null=True)


class RetrievalSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True)
    tokens_added = serializers.IntegerField()
    memories = RetrievedMemorySerializer(many=True)


class UsageSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    model = StrictCharField(allow_blank=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    retrieval_tokens = serializers.IntegerField(
        help_text="Part des tokens d'entrée ajoutée par l'auto-retrieval."
    )
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6, coerce_to_string=True)


class ToolCallSerializer(serializers.Serializer):
    name = StrictCharField()
    input = serializers.DictField()
    is_error = serializers.BooleanField()


class ChatOutputSerializer(serializers.Serializer):
    reply = StrictCharField(
        allow_blank=True,
        help_text="Vide quand le canal est un salon observé : l'agent n'y répond pas.",
    )
    channel = StrictCharField()
    message_ids = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Les messages de l'utilisateur auxquels répond cette réponse (plusieurs s'ils "
        "sont arrivés ensemble).",
    )
    reply_id = serializers.IntegerField(allow_null=True)
    coalesced = serializers.BooleanField()
    retrieval = RetrievalSummarySerializer(allow_null=True)
    usage = UsageSerializer()
    tool_calls = ToolCallSerializer(many=True)
    replayed = serializers.BooleanField(
        help_text="true : la réponse d'un envoi déjà traité avec cette clé d'idempotence, rien "
        "n'a été enregistré ni payé (``tool_calls`` est alors vide)."
    )


def retrieval_data(retrieval) -> dict | None:
    """What the auto-retrieval injected, as the API shows it (None: it did not run)."""
    if retrieval is None:
        return None
    return {
        "id": getattr(retrieval, "retrieval_id", None),
        "tokens_added": int(getattr(retrieval, "tokens_added", 0) or 0),
        "memories": list(getattr(retrieval, "memories", []) or []),
    }


def chat_result_data(result) -> dict:
    """A ChatResult as the API's JSON shape."""
    return {
        "reply": result.reply,
        "channel": result.channel,
        "message_ids": result.message_ids,
        "reply_id": result.reply_id,
        "coalesced": result.coalesced,
        "retrieval": retrieval_data(result.retrieval),
        "usage": result.usage.as_dict(),
        "tool_calls": [
            {"name": o.name, "input": o.input, "is_error": o.is_error} for o in result.tool_calls
        ],
        "replayed": result.replayed,
    }
