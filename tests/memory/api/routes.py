"""The DRF views of the URLconf, read once for the tests that check every endpoint."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView


def api_routes() -> list[tuple[str, type[APIView]]]:
    """(route, view class) of every DRF view the URLconf serves, in URLconf order."""
    found: list[tuple[str, type[APIView]]] = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
                continue
            assert isinstance(pattern, URLPattern)
            view_class = getattr(pattern.callback, "cls", None)
            if isinstance(view_class, type) and issubclass(view_class, APIView):
                found.append((route, view_class))

    walk(get_resolver().url_patterns, "")
    return found


def api_view_classes(prefix: str) -> set[type[APIView]]:
    """The DRF view classes routed under ``prefix`` ("api/v1/": the memory and agent APIs)."""
    return {view_class for route, view_class in api_routes() if route.startswith(prefix)}
