"""POST /api/memory/maintenance/<operation>, GET /api/memory/maintenance/runs/<id>.

The channel through which `reindex`, `memory_doctor`, `purge_expired`,
`memory_seed_self` and `memory_digest`, run beside `serve`, have serve (the one
owner of the embedded Qdrant folder) do the work (memory.services.serve_link).
Only the serving process's local secret opens it, never a token or a session:
an agent's token, or an owner's token that leaked, cannot start heavy work from
afar. Not part of the public API
(left out of the OpenAPI schema), unthrottled (the command polls).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.fields import StrictBooleanField, StrictCharField, StrictIntegerField
from memory.api.parsers import LimitedJSONParser
from memory.api.serializers import StrictInputSerializer
from memory.services.maintenance_runs import (
    COLLECTION_CHOICES,
    MaintenanceBusy,
    maintenance_get,
    maintenance_start,
)
from memory.services.serve_link import SECRET_HEADER, secret_matches

LOCAL_ONLY_MESSAGE = (
    "Réservé aux commandes de maintenance lancées sur la machine du service "
    "(secret local de serve)."
)
UNKNOWN_OPERATION_MESSAGE = "Opération de maintenance inconnue : {operation}."
UNKNOWN_RUN_MESSAGE = "Aucune opération de maintenance avec cet identifiant."


class HasLocalSecret(BasePermission):
    message = LOCAL_ONLY_MESSAGE

    def has_permission(self, request, view) -> bool:
        return secret_matches(request.headers.get(SECRET_HEADER))


class ReindexOptions(StrictInputSerializer):
    collection = serializers.ChoiceField(COLLECTION_CHOICES, default="all")
    batch_size = StrictIntegerField(min_value=1, max_value=10_000, default=64)
    recreate = StrictBooleanField(default=False)


class DoctorOptions(StrictInputSerializer):
    collection = serializers.ChoiceField(COLLECTION_CHOICES, default="all")
    fix = StrictBooleanField(default=False)


class NoOptions(StrictInputSerializer):
    pass


class SeedSelfOptions(StrictInputSerializer):
    # The file's text as the command read it (serve may not see the command's files).
    text = StrictCharField(trim_whitespace=False)


OPTIONS = {
    "reindex": ReindexOptions,
    "doctor": DoctorOptions,
    "purge-expired": NoOptions,
    "vector-counts": NoOptions,
    "seed-self": SeedSelfOptions,
    "digest": NoOptions,
}


class LocalMaintenanceApi(APIView):
    authentication_classes: list = []
    permission_classes = [HasLocalSecret]
    throttle_classes: list = []
    parser_classes = [LimitedJSONParser]


@extend_schema(exclude=True)
class MaintenanceStartApi(LocalMaintenanceApi):
    name = "Lancement d'une maintenance"

    def post(self, request: Request, operation: str) -> Response:
        if operation not in OPTIONS:
            raise NotFound(UNKNOWN_OPERATION_MESSAGE.format(operation=operation))
        options = OPTIONS[operation](data=request.data)
        options.is_valid(raise_exception=True)
        try:
            run = maintenance_start(operation=operation, options=dict(options.validated_data))
        except MaintenanceBusy as exc:
            return Response({"message": str(exc), "extra": {}}, status=status.HTTP_409_CONFLICT)
        return Response(run.as_dict(), status=status.HTTP_202_ACCEPTED)


@extend_schema(exclude=True)
class MaintenanceRunApi(LocalMaintenanceApi):
    name = "Suivi d'une maintenance"

    def get(self, request: Request, run_id: str) -> Response:
        run = maintenance_get(run_id)
        if run is None:
            raise NotFound(UNKNOWN_RUN_MESSAGE)
        return Response(run.as_dict())
