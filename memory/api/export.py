"""GET /api/memory/export: the whole memory as a JSONL download (the memory_export format)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request

from memory.api.fields import StrictCharField
from memory.api.permissions import IsOwner
from memory.api.serializers import QuerySerializer
from memory.api.views import ERRORS, MemoryApi
from memory.services.portability import export_lines, parse_since

CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
FILENAME = "makilab-memoire-{stamp}.jsonl"


class ExportQuerySerializer(QuerySerializer):
    since = StrictCharField(required=False, max_length=40)

    def validate_since(self, value: str):
        try:
            return parse_since(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc).replace("--since", "since")) from None


class MemoryExportApi(MemoryApi):
    query_methods = frozenset({"get"})
    name = "Export de la mémoire"
    permission_classes = [IsOwner]

    @extend_schema(
        operation_id="memory_export",
        summary="Exporter la mémoire (JSONL)",
        description=(
            "Le format de `manage.py memory_export` (version 1) : un en-tête puis un "
            "enregistrement par ligne (réglages, notes de contexte, messages, résumés, faits "
            "avec leurs révisions). Rien d'oublié n'est exporté, ni aucun vecteur. "
            "Réservé au propriétaire (compte d'équipe)."
        ),
        parameters=[
            OpenApiParameter(
                "since",
                str,
                description="Seulement ce qui a changé depuis cette date (AAAA-MM-JJ ou ISO 8601).",
            )
        ],
        responses={
            200: OpenApiResponse(OpenApiTypes.STR, description="Le fichier JSONL."),
            **ERRORS,
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        query = ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        response = StreamingHttpResponse(
            export_lines(since=query.validated_data.get("since")), content_type=CONTENT_TYPE
        )
        stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
        response["Content-Disposition"] = f'attachment; filename="{FILENAME.format(stamp=stamp)}"'
        return response
