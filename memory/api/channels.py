"""Observed rooms in the API: per-channel settings and the digest (thin views)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.fields import ApiModelSerializer, JsonListField, StrictCharField
from memory.api.pagination import MemoryPagination
from memory.api.serializers import UnknownFieldsRefused
from memory.api.views import ERRORS, PAGE_NOT_FOUND, MemoryApi
from memory.models import ChannelSettings, Digest
from memory.services.channels import channel_settings_get, channel_settings_set
from memory.services.digest import digest_request, digest_status_get

CHANNEL_PARAMETER = OpenApiParameter(
    "channel",
    str,
    OpenApiParameter.PATH,
    description="Le nom du canal (lettres, chiffres, - _ et ., 64 caractères au plus).",
)


class ChannelSettingsSerializer(UnknownFieldsRefused, ApiModelSerializer):
    """GET and PUT /channels/<channel>; PUT refuses a field it does not write (a typo)."""

    updated_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="null : le canal n'a jamais eu de réglages."
    )

    class Meta:
        model = ChannelSettings
        fields = ("channel", "observed", "updated_at")
        read_only_fields = ("channel", "updated_at")
        extra_kwargs = {"observed": {"required": True}}


class DigestSerializer(serializers.ModelSerializer):
    class Meta:
        model = Digest
        fields = (
            "started_at",
            "finished_at",
            "state",
            "trigger",
            "messages_digested",
            "facts_stored",
            "cost_usd",
            "note",
        )


class DigestStatusSerializer(serializers.Serializer):
    observed = JsonListField(child=StrictCharField(), help_text="Les salons observés.")
    live_count = serializers.IntegerField(
        help_text="Messages des salons observés pas encore digérés (la mémoire live)."
    )
    last = DigestSerializer(allow_null=True, help_text="Le dernier digest (null : aucun).")
    next_at = serializers.DateTimeField(help_text="La prochaine heure fixe du digest.")
    pending = serializers.BooleanField(help_text="Un digest est en file ou en cours.")


def _status_data() -> dict:
    found = digest_status_get()
    return {
        "observed": found.observed,
        "live_count": found.live_count,
        "last": found.last,
        "next_at": found.next_at,
        "pending": found.open_job is not None,
    }


class ChannelListApi(MemoryApi):
    name = "Canaux"
    pagination_class = MemoryPagination

    @extend_schema(
        operation_id="channels_list",
        summary="Réglages des canaux",
        description="Les canaux qui ont des réglages (observé ou non), par nom, paginés.",
        responses={200: ChannelSettingsSerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        rows = ChannelSettings.objects.order_by("channel")
        return self.paginate(request, rows, ChannelSettingsSerializer)


class ChannelDetailApi(MemoryApi):
    name = "Canal"
    owner_methods = frozenset({"put"})

    @extend_schema(
        operation_id="channels_get",
        summary="Réglages d'un canal",
        description="Un canal sans réglages n'est pas observé.",
        parameters=[CHANNEL_PARAMETER],
        responses={200: ChannelSettingsSerializer, **ERRORS},
    )
    def get(self, request: Request, channel: str) -> Response:
        return Response(ChannelSettingsSerializer(channel_settings_get(channel=channel)).data)

    @extend_schema(
        operation_id="channels_update",
        summary="Observer un canal (ou non)",
        description=(
            "Un salon observé : ses messages sont gardés et cherchés par l'auto-retrieval "
            "(collection live), l'agent n'y répond pas, le digest en tire les faits durables. "
            "Seuls les messages reçus ensuite suivent le changement."
        ),
        parameters=[CHANNEL_PARAMETER],
        request=ChannelSettingsSerializer,
        responses={200: ChannelSettingsSerializer, **ERRORS},
    )
    def put(self, request: Request, channel: str) -> Response:
        body = ChannelSettingsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        saved = channel_settings_set(channel=channel, observed=body.validated_data["observed"])
        return Response(ChannelSettingsSerializer(saved).data)


class DigestApi(MemoryApi):
    name = "Digest des salons observés"
    owner_methods = frozenset({"post"})
    # No options: a stray field or a body that is no object is a 400 (MemoryApi).
    bodiless_methods = frozenset({"post"})

    @extend_schema(
        operation_id="digest_status",
        summary="Le digest des salons observés",
        description="Salons observés, mémoire live, dernier digest et prochain.",
        responses={200: DigestStatusSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return Response(DigestStatusSerializer(_status_data()).data)

    @extend_schema(
        operation_id="digest_run",
        summary="Lancer le digest maintenant",
        description=(
            "Met un digest en file (ou garde celui qui attend déjà) ; il tourne en tâche de "
            "fond. Sans LLM configuré, il attend et rien n'est retiré de la mémoire live."
        ),
        request=None,
        responses={
            202: OpenApiResponse(DigestStatusSerializer, description="Digest demandé."),
            **ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        digest_request()
        return Response(
            DigestStatusSerializer(_status_data()).data, status=status.HTTP_202_ACCEPTED
        )
