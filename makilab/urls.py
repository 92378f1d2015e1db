"""Root URLconf: admin, the APIs with their OpenAPI schema, the dashboard, login/logout.

API versioning: ``/api/v1/`` is the stable prefix. The same route lists are mounted
twice: under ``/api/v1/`` in the ``v1`` namespace (``reverse("v1:memory-api:facts")``)
and, as aliases kept for existing clients, at the unversioned ``/api/memory/`` and
``/api/agent/`` (``reverse("memory-api:facts")``, unchanged). The schema describes the
v1 paths only (makilab.schema.v1_endpoints_only).

An address under /api/ that matches no route is the API's JSON 404 (handler404).
"""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from dashboard.auth import staff_required
from dashboard.forms import StaffAuthenticationForm
from memory.mcp.http import mcp_endpoint

handler404 = "makilab.exception_handlers.page_not_found"

API_V1 = [
    path("memory/", include("memory.api.urls")),
    path("agent/", include("agent.api.urls")),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboard:memory", permanent=False)),
    path("admin/", admin.site.urls),
    # --- APIs: /api/v1/ is the stable prefix, the unversioned paths are aliases ---
    path("api/v1/", include((API_V1, "v1"), namespace="v1")),
    path("api/memory/", include("memory.api.urls")),
    path("api/agent/", include("agent.api.urls")),
    # --- MCP (streamable HTTP, token required) --------------------------------
    path("mcp", mcp_endpoint, name="mcp"),
    # --- OpenAPI ------------------------------------------------------------
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "api/docs/",
        staff_required(SpectacularSwaggerView.as_view(url_name="schema")),
        name="api-docs",
    ),
    # --- Dashboard and its login ---------------------------------------------
    path(
        "login/",
        auth_views.LoginView.as_view(
            authentication_form=StaffAuthenticationForm, redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("chat/", include("agent.urls")),
    path("", include("dashboard.urls")),
]
