"""The JSON parser every DRF endpoint uses: hostile bodies are a French 400, never a 500.

The routes are read from the URLconf (every DRF view with POST, PUT or PATCH),
so an endpoint added later is checked without editing this file.
"""

from __future__ import annotations

import json
import re

import pytest

from memory.api.parsers import (
    JSON_INVALID_AT_MESSAGE,
    JSON_TOO_DEEP_MESSAGE,
    MAX_JSON_DEPTH,
    LimitedJSONParser,
    json_depth_exceeds,
)
from memory.models import Fact
from memory.services.facts import fact_store
from tests.memory.api.routes import api_routes

pytestmark = pytest.mark.django_db

WRITE_METHODS = ("post", "put", "patch")
# "[" * 1000 + "]" * 1000: 2 KB that made json.loads raise RecursionError (a 500).
DEEP_BODY = "[" * 1000 + "]" * 1000
EXAMPLES = {
    "key": "nick",
    "forgetting_id": "1",
    "operation": "reindex",
    "run_id": "inconnu",
    "channel": "lobby",
}


def _json_write_routes() -> list[tuple[str, str]]:
    """(method, url) for each DRF view of the URLconf that takes a body."""
    found: list[tuple[str, str]] = []
    for route, view_class in api_routes():
        url = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: EXAMPLES[m.group(1)], route)
        found.extend((m, url) for m in WRITE_METHODS if hasattr(view_class, m))
    return found


JSON_WRITE_ROUTES = _json_write_routes()


def test_the_walk_finds_the_json_endpoints_of_both_apis():
    urls = {url for _method, url in JSON_WRITE_ROUTES}
    assert {"/api/memory/facts", "/api/memory/settings", "/api/agent/chat"} <= urls
    assert len(JSON_WRITE_ROUTES) >= 8


@pytest.mark.parametrize(("method", "url"), JSON_WRITE_ROUTES)
def test_a_body_nested_a_thousand_levels_deep_is_a_french_400(staff_api, method, url):
    """Where the endpoint reads its body, it refuses the depth; elsewhere, never a 500."""
    # Each call starts from the same world: an endpoint that ignores its body may
    # act (a delete, a restore) on the first call.
    fact_store(key="nick", value="Mika")
    malformed = staff_api.generic(method.upper(), url, "{", content_type="application/json")
    fact_store(key="nick", value="Mika")
    deep = staff_api.generic(method.upper(), url, DEEP_BODY, content_type="application/json")
    assert deep.status_code < 500, deep.content
    if malformed.status_code == 400 and malformed.json()["message"].startswith("Corps JSON"):
        # The endpoint parses its body (a malformed one is a parse error): so is a deep one.
        assert deep.status_code == 400
        assert deep.json() == {
            "message": JSON_TOO_DEEP_MESSAGE.format(limit=MAX_JSON_DEPTH),
            "extra": {},
        }
    else:
        assert deep.status_code == malformed.status_code


def test_a_body_just_past_the_depth_limit_is_refused_and_one_at_it_is_read(staff_api):
    def nested(depth: int) -> str:
        return json.dumps({"key": "deep", "value": "x", "subjects": ["a"]})[:-1] + (
            ', "extra": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
        )

    too_deep = staff_api.generic(
        "POST", "/api/memory/facts", nested(MAX_JSON_DEPTH + 1), content_type="application/json"
    )
    assert too_deep.status_code == 400
    assert too_deep.json()["message"] == JSON_TOO_DEEP_MESSAGE.format(limit=MAX_JSON_DEPTH)
    at_limit = staff_api.generic(
        "POST", "/api/memory/facts", nested(MAX_JSON_DEPTH), content_type="application/json"
    )
    # Parsed: the serializer then names the unknown field, in French.
    assert at_limit.status_code == 400
    assert "extra" in at_limit.json()["extra"]["fields"]
    assert not Fact.objects.filter(key="deep").exists()


def test_malformed_json_names_the_line_and_column_in_french(agent_api):
    response = agent_api.generic(
        "POST", "/api/memory/facts", '{"key": "a",\n "value": }', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["message"] == JSON_INVALID_AT_MESSAGE.format(
        reason="valeur attendue", line=2, column=11
    )


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"key": "a", "value": NaN}', "application/json"),
        (b'{"key": "\xff"}', "application/json"),
        (b'{"key": "a", "value": "b"}', "application/json; charset=rot13"),
    ],
    ids=["nan", "not-utf8", "not-a-text-charset"],
)
def test_other_unreadable_bodies_are_french_400s(agent_api, body, content_type):
    response = agent_api.generic("POST", "/api/memory/facts", body, content_type=content_type)
    assert response.status_code == 400
    assert response.json()["message"].startswith("Corps JSON")
    assert not Fact.objects.exists()


def test_the_limited_parser_is_the_default_of_every_drf_view(settings):
    assert settings.REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"][0] == (
        f"{LimitedJSONParser.__module__}.{LimitedJSONParser.__qualname__}"
    )


@pytest.mark.parametrize(
    ("data", "limit", "exceeds"),
    [
        ([[[]]], 3, False),
        ([[[]]], 2, True),
        ({"a": [1, {"b": []}]}, 4, False),
        ({"a": [1, {"b": []}]}, 3, True),
        ("[[[[", 1, False),  # a string is a leaf, whatever it holds
        (json.loads("[" * 900 + "]" * 900), 899, True),
    ],
)
def test_json_depth_counts_nested_containers_without_recursing(data, limit, exceeds):
    assert json_depth_exceeds(data, limit) is exceeds


def test_a_number_with_too_many_digits_is_said_so(agent_api):
    """QA: a 5,000-digit importance was refused as « NaN et Infinity ne sont pas du JSON »,
    a body holding neither."""
    body = b'{"key": "k", "value": "v", "importance": ' + b"9" * 5000 + b"}"

    response = agent_api.generic("POST", "/api/memory/facts", body, content_type="application/json")

    assert response.status_code == 400
    message = response.json()["message"]
    assert "NaN" not in message and "chiffres" in message, message
    assert not Fact.objects.exists()
