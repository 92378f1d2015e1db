"""Schemathesis against the live OpenAPI schema: the API keeps the contract it publishes.

The schema is the one /api/schema/ serves (fetched with the owner's token, as a
client would), the app is the real WSGI application on the test database, and
every operation gets a bounded, derandomized number of generated cases, sent with
the owner's (staff) token. Checked: no server error (5xx), the status code and the
body of every response are the ones the schema documents.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from memory.api.serializers import MemorySettingsSerializer
from memory.stores.notes import MAX_PATH_CHARS, MSG_PATH_TOO_LONG
from tests.fakes.anthropic import fake_anthropic  # noqa: F401  (fixture: the chat answers)

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

MAX_EXAMPLES = 25
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


@pytest.fixture
def owner_token(staff_user) -> str:
    return Token.objects.create(user=staff_user).key


def published_schema() -> dict:
    """The schema /api/schema/ serves, built without a request (no token exists yet at
    collection time; test_the_served_schema_is_the_one_tested checks they agree)."""
    generator = SchemaGenerator()
    rendered = OpenApiJsonRenderer().render(generator.get_schema(request=None, public=True))
    return json.loads(rendered)


schema = schemathesis.openapi.from_dict(published_schema())
# Valid inputs only: what the schema allows must be accepted and answered as documented.
schema.config.generation.update(modes=[GenerationMode.POSITIVE])
# The streamed chat is left out: its body is server-sent events, which schemathesis checks
# event by event against the schema of the JSON body (an {"event", "data"} object is not
# an error body); tests/agent/test_chat_api.py covers its events and errors.
schema = schema.exclude(path="/api/v1/agent/chat/stream")


@pytest.fixture
def wsgi_app():
    """The project's WSGI application on the test database. As Django's test client
    does, the connection is not closed at the end of each request (it is the test's)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_the_served_schema_is_the_one_tested(owner_token):
    response = Client(HTTP_AUTHORIZATION=f"Token {owner_token}").get(
        "/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200
    assert response.json() == published_schema()
    assert len(list(schema.get_all_operations())) >= 20


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_the_published_contract(
    case,
    owner_token,
    wsgi_app,
    fake_anthropic,  # noqa: F811
):
    fake_anthropic.handler = lambda request: "D'accord."  # every chat call gets an answer
    case.call_and_validate(
        app=wsgi_app,
        headers={"Authorization": f"Token {owner_token}"},
        checks=CHECKS,
    )


def test_a_note_path_at_the_limit_without_its_suffix_is_refused_not_stored_longer():
    """Found by schemathesis: "0" * 500 became "000….md" (503 characters) in the
    settings, over the documented maxLength; the normalized path is checked too."""
    body = MemorySettingsSerializer(data={"obsidian_context_notes": ["0" * MAX_PATH_CHARS]})
    assert body.is_valid(), body.errors
    from memory.services.settings import memory_settings_update

    with pytest.raises(DjangoValidationError) as refused:
        memory_settings_update(changes=dict(body.validated_data))
    assert MSG_PATH_TOO_LONG in str(refused.value)
