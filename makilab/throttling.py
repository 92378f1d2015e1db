"""Throttling: API rates (DRF) and the login lockout page (django-axes).

DRF copies its throttle rates into the throttle classes when they are
imported, so a rate changed later (a test's settings, a reload) was ignored;
these classes read REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] on every request.
A rate of None turns a throttle off (the test settings do so for the whole
suite; tests/test_throttling.py turns it on).
"""

from __future__ import annotations

import math

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework import throttling
from rest_framework.settings import api_settings

# The lock counts per username or per address (settings.AXES_LOCKOUT_PARAMETERS): wrong
# passwords for another name from this address lock every account here too.
LOGIN_LOCKED_MESSAGE = (
    "Trop de tentatives de connexion échouées depuis cette adresse ou pour ce compte : "
    "connexion bloquée. Réessayez dans {minutes} minutes."
)
LOCKED_OUT_TEMPLATE = "registration/locked_out.html"


class _SettingsRate:
    scope: str | None

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class UserRateThrottle(_SettingsRate, throttling.UserRateThrottle):
    """Per account (the agent's token, the owner's session); per address when anonymous."""


class AnonRateThrottle(_SettingsRate, throttling.AnonRateThrottle):
    """Anonymous calls, per address (the few endpoints that do not require a login)."""


class ScopedRateThrottle(_SettingsRate, throttling.ScopedRateThrottle):
    """The views that name a ``throttle_scope`` (the chat: every call costs an LLM call)."""


def refused_caller_wait(request) -> int | None:
    """Count a caller refused for its credentials (no token, a wrong one) as anonymous, per
    address (MAKILAB_API_ANON_RATE): the seconds it must wait once past the rate, else None.

    DRF refuses authentication before it counts anything, so without this a token guesser
    was never throttled; the API (memory.api.views.MemoryApi) and /mcp both call it."""
    throttle = AnonRateThrottle()
    if throttle.allow_request(request, None):
        return None
    return max(1, math.ceil(throttle.wait() or 1))


def login_locked_out(request: HttpRequest, response=None, credentials=None) -> HttpResponse:
    """django-axes' lockout answer: the French page, 429 (AXES_LOCKOUT_CALLABLE)."""
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    message = LOGIN_LOCKED_MESSAGE.format(minutes=minutes)
    # The address django-axes counted (its own resolution, proxies included).
    address = getattr(request, "axes_ip_address", None) or request.META.get("REMOTE_ADDR", "")
    context = {"message": message, "address": address}
    return render(request, LOCKED_OUT_TEMPLATE, context, status=429)
