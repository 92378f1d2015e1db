"""Root URLconf: admin, the APIs with their OpenAPI schema, the dashboard, login/logout."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from dashboard.auth import staff_required
from dashboard.forms import StaffAuthenticationForm
from memory.mcp.http import mcp_endpoint

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboard:memory", permanent=False)),
    path("admin/", admin.site.urls),
    # --- APIs ---------------------------------------------------------------
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
