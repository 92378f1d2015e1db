"""drf-spectacular hooks: the published schema is the one of the stable API prefix."""

from __future__ import annotations

from drf_spectacular import openapi
from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import serializers

from memory.api.fields import StrictCharField

API_V1_PREFIX = "/api/v1/"
# Plain text fields only (the API's are StrictCharField): choices, dates, numbers, regexes...
# have their own schema.
PLAIN_CHAR_FIELDS = (serializers.CharField, StrictCharField)
NOT_BLANK_NO_NUL_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"


def v1_endpoints_only(endpoints, **kwargs):
    """Preprocessing hook: describe /api/v1/… only; the unversioned paths are aliases of
    the same views (makilab/urls.py), so listing them too would repeat every operation id."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith(API_V1_PREFIX)]


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's AutoSchema, saying in request bodies and parameters what DRF's
    CharField refuses unless it allows blank: an empty or whitespace-only string
    (trimmed, then refused) and a NUL character (ProhibitNullCharactersValidator).
    Fields that allow blank keep no pattern: spectacular would wrap it in a oneOf
    that "" matches twice."""

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (
            type(field) in PLAIN_CHAR_FIELDS
            and schema.get("type") == "string"
            and "pattern" not in schema
            and "format" not in schema
            and not field.read_only
            and not field.allow_blank
            and direction == "request"
        ):
            schema["minLength"] = max(schema.get("minLength", 0), 1)
            schema["pattern"] = NOT_BLANK_NO_NUL_PATTERN
        return schema


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The API's token sent as ``Authorization: Bearer <token>``
    (memory.api.permissions.BearerTokenAuthentication), a component of its own: as a
    subclass of DRF's token class it took "tokenAuth" a second time (29 warnings)."""

    target_class = "memory.api.permissions.BearerTokenAuthentication"
    name = "bearerAuth"
    priority = 1

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "Le même jeton que « Token <jeton> », envoyé en « Bearer <jeton> ».",
        }


class FrenchCsrfSessionScheme(SessionScheme):
    """The owner's session (makilab.api_authentication: DRF's, its CSRF refusal in French),
    described as DRF's session is: the same cookie, the same component."""

    target_class = "makilab.api_authentication.FrenchCsrfSessionAuthentication"
