"""drf-spectacular hooks: the published schema is the one of the stable API prefix."""

from __future__ import annotations

API_V1_PREFIX = "/api/v1/"


def v1_endpoints_only(endpoints, **kwargs):
    """Preprocessing hook: describe /api/v1/… only; the unversioned paths are aliases of
    the same views (makilab/urls.py), so listing them too would repeat every operation id."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith(API_V1_PREFIX)]
