"""The OpenAPI schema covers every memory route; the docs page needs no CDN."""

from __future__ import annotations

import re

import pytest

from makilab.schema import NOT_BLANK_NO_NUL_PATTERN
from tests.memory.api.routes import api_routes

pytestmark = pytest.mark.django_db


def openapi_routes(prefix: str = "api/v1/memory/") -> set[str]:
    """Every route under ``prefix`` in the URLconf, in OpenAPI form (/facts/{key})."""
    return {
        "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        for route, _view in api_routes()
        if route.startswith(prefix)
    }


def test_every_memory_route_is_in_the_schema(agent_api):
    response = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    # serve's maintenance channel is for its own commands (local secret), not an API.
    routes = {r for r in openapi_routes() if not r.startswith("/api/v1/memory/maintenance/")}
    assert len(routes) >= 8
    assert routes <= set(schema["paths"])
    facts = schema["paths"]["/api/v1/memory/facts/{key}"]
    assert {"get", "patch", "delete"} <= set(facts)
    assert "restaur" in facts["delete"]["description"]
    assert "503" in schema["paths"]["/api/v1/memory/search"]["get"]["responses"]


def test_the_schema_needs_authentication(anonymous_api):
    assert anonymous_api.get("/api/schema/").status_code in (401, 403)


def test_the_docs_page_loads_swagger_from_our_static_files(staff_client):
    response = staff_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert not re.search(r"""(src|href)=["']https?://""", html)
    script = staff_client.get(
        "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"
    )
    assert script.status_code == 200


def test_the_schema_describes_the_v1_paths_and_the_unversioned_ones_are_aliases(agent_api):
    schema = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["paths"]
    assert all(path.startswith("/api/v1/") for path in schema["paths"])
    operation_ids = [op["operationId"] for item in schema["paths"].values() for op in item.values()]
    assert len(operation_ids) == len(set(operation_ids))
    stable = agent_api.get("/api/v1/memory/facts")
    alias = agent_api.get("/api/memory/facts")
    assert stable.status_code == alias.status_code == 200
    assert stable.json() == alias.json()


@pytest.mark.parametrize(
    ("component", "field"),
    [
        ("FactInput", "value"),
        ("FactInput", "key"),
        ("ForgetInput", "topic"),
        ("ChatInput", "message"),
    ],
)
def test_a_request_text_field_is_described_not_blank_and_without_nul(agent_api, component, field):
    schema = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    described = schema["components"]["schemas"][component]["properties"][field]
    assert (described["minLength"], described["pattern"]) == (1, NOT_BLANK_NO_NUL_PATTERN)


def test_the_schema_is_generated_without_a_warning(tmp_path):
    """drf-spectacular warned 29 times once the API took Bearer tokens: two
    authentication classes under one component name, "tokenAuth" (review)."""
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))
    schema = (tmp_path / "s.yaml").read_text()
    assert "bearerAuth" in schema and "scheme: bearer" in schema


def test_a_patch_importance_is_described_as_it_is_checked(agent_api):
    """The schema said PATCH took importance null, which answered 400 (black-box QA)."""
    from memory.api.serializers import IMPORTANCE_REQUIRED_MESSAGE
    from memory.services.facts import fact_store

    schema = agent_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    patch = schema["paths"]["/api/v1/memory/facts/{key}"]["patch"]
    ref = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    importance = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"]["importance"]
    assert not importance.get("nullable", False)
    fact_store(key="k", value="v")
    response = agent_api.patch("/api/v1/memory/facts/k", {"importance": None}, format="json")
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["importance"] == [IMPORTANCE_REQUIRED_MESSAGE]
