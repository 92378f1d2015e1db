"""A caller the API refuses (no token, a wrong one) is counted per address like any
anonymous call: past MAKILAB_API_ANON_RATE it gets the French 429.

DRF refuses authentication before it counts anything, so the anonymous rate the README
promises never applied to a token guesser: 70 wrong tokens in a row were 70 × 401.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token

from makilab.exception_handlers import THROTTLED_MESSAGE

pytestmark = pytest.mark.django_db


@pytest.fixture
def anon_rate(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "100/minute", "anon": "3/minute", "chat": None},
    }
    cache.clear()
    yield
    cache.clear()


@pytest.mark.parametrize(
    "headers",
    [{}, {"HTTP_AUTHORIZATION": "Token " + "0" * 40}, {"HTTP_AUTHORIZATION": "Bearer x"}],
    ids=["no-token", "wrong-token", "wrong-keyword"],
)
def test_refused_callers_are_throttled_per_address_in_french(anon_rate, headers):
    client = Client(**headers)
    assert [client.get("/api/v1/memory/stats").status_code for _ in range(3)] == [401] * 3
    refused = client.get("/api/v1/memory/stats")
    assert refused.status_code == 429
    wait = int(refused["Retry-After"])
    assert refused.json() == {"message": THROTTLED_MESSAGE.format(wait=wait), "extra": {}}


def test_a_valid_token_from_the_same_address_is_still_served(anon_rate, django_user_model):
    guesser = Client(HTTP_AUTHORIZATION="Token " + "0" * 40)
    for _ in range(4):
        guesser.get("/api/v1/memory/stats")
    agent = django_user_model.objects.create_user(username="agent", password=None)
    key = Token.objects.create(user=agent).key
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/memory/stats").status_code == 200


def test_a_forwarded_for_header_does_not_give_a_guesser_new_addresses(anon_rate):
    """Without a proxy in front, X-Forwarded-For is the client's own words: DRF took it
    as the address, and a guesser changing it was never throttled."""
    statuses = [
        Client(HTTP_AUTHORIZATION="Token " + "0" * 40, HTTP_X_FORWARDED_FOR=f"10.0.0.{i}")
        .get("/api/v1/memory/stats")
        .status_code
        for i in range(5)
    ]
    assert statuses == [401, 401, 401, 429, 429]


def test_refused_callers_of_the_mcp_endpoint_are_throttled_too(anon_rate):
    client = Client(HTTP_AUTHORIZATION="Bearer " + "0" * 40)
    statuses = [
        client.post("/mcp", "{}", content_type="application/json").status_code for _ in range(4)
    ]
    assert statuses == [401, 401, 401, 429]
    refused = client.post("/mcp", "{}", content_type="application/json")
    wait = int(refused["Retry-After"])
    assert refused.json() == {"message": THROTTLED_MESSAGE.format(wait=wait), "extra": {}}
