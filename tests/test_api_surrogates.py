"""A lone UTF-16 surrogate the API echoes in an error is shown as « U+D800 »: a French 400,
never a 500 (makilab/exception_handlers.py).

JSON lets a client send one (``"\\ud800"``) and json.loads keeps it. A text field refuses
it by name (« Les caractères de substitution ne sont pas autorisés : U+D800. »), but a
fixed-choice field quotes the bad value and an unknown field is named: no UTF-8 holds the
surrogate, so the renderer failed (UnicodeEncodeError) and the client got a 500 (QA).
"""

from __future__ import annotations

import pytest

from makilab.exception_handlers import VALIDATION_MESSAGE
from memory.services.facts import fact_store
from tests.memory.api.conftest import (  # noqa: F401
    agent_api,
    agent_token,
    agent_user,
    owner_api,
)

pytestmark = pytest.mark.django_db

M = "/api/v1/memory"

# Raw strings: each body carries the JSON escape \ud800 on the wire.
BAD_CHOICES = [
    (f"{M}/facts", r'{"key": "k", "value": "v", "memory_type": "\ud800"}'),
    (f"{M}/facts", r'{"key": "k", "value": "v", "source": "\ud800"}'),
    (f"{M}/facts", r'{"key": "k", "value": "v", "kind": "\ud800"}'),
    (f"{M}/facts", r'{"key": "k", "value": "v", "category": "\ud800"}'),
    (f"{M}/messages", r'{"channel": "wa", "content": "bonjour", "role": "\ud800"}'),
    (f"{M}/messages", r'{"channel": "wa", "content": "bonjour", "source": "\ud800"}'),
    (f"{M}/messages", r'{"messages": [{"channel": "wa", "content": "b", "role": "\ud800"}]}'),
    ("/api/v1/agent/chat", r'{"channel": "wa", "message": "salut", "source": "\ud800"}'),
]
UNKNOWN_FIELD_NAMES = [
    (f"{M}/facts", r'{"key": "k", "value": "v", "\ud800": 1}'),
    (f"{M}/messages", r'{"channel": "wa", "content": "bonjour", "\ud800": 1}'),
    (f"{M}/messages", r'{"messages": [{"channel": "wa", "content": "b", "\ud800": 1}]}'),
    (f"{M}/context", r'{"channel": "wa", "message": "bonjour", "\ud800": 1}'),
    (f"{M}/preview", r'{"channel": "wa", "message": "bonjour", "\ud800": 1}'),
    (f"{M}/forget", r'{"topic": "x", "dry_run": true, "\ud800": 1}'),
    ("/api/v1/agent/chat", r'{"channel": "wa", "message": "salut", "\ud800": 1}'),
]


def _assert_shown_in_a_french_400(response) -> None:
    assert response.status_code == 400, response.status_code
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["message"] == VALIDATION_MESSAGE
    assert "U+D800" in response.content.decode()


@pytest.mark.parametrize("path,body", BAD_CHOICES, ids=[b for _, b in BAD_CHOICES])
def test_a_lone_surrogate_as_a_choice_is_shown_in_a_400(agent_api, path, body):  # noqa: F811
    agent_api.raise_request_exception = False
    response = agent_api.post(path, data=body, content_type="application/json")

    _assert_shown_in_a_french_400(response)


@pytest.mark.parametrize("path,body", UNKNOWN_FIELD_NAMES, ids=[b for _, b in UNKNOWN_FIELD_NAMES])
def test_a_lone_surrogate_as_a_field_name_is_shown_in_a_400(agent_api, path, body):  # noqa: F811
    agent_api.raise_request_exception = False
    response = agent_api.post(path, data=body, content_type="application/json")

    _assert_shown_in_a_french_400(response)


def test_a_lone_surrogate_as_a_patched_type_is_shown_in_a_400(agent_api):  # noqa: F811
    fact_store(key="voiture", value="Clio", actor="agent")
    agent_api.raise_request_exception = False
    response = agent_api.patch(
        f"{M}/facts/voiture",
        data=r'{"memory_type": "\ud800"}',
        content_type="application/json",
    )

    _assert_shown_in_a_french_400(response)


@pytest.mark.parametrize(
    "method,path", [("patch", f"{M}/settings"), ("post", f"{M}/facts/k/erase")]
)
def test_a_lone_surrogate_as_a_field_name_is_shown_on_the_owner_endpoints(
    owner_api,  # noqa: F811
    method,
    path,
):
    owner_api.raise_request_exception = False
    response = getattr(owner_api, method)(
        path, data=r'{"\ud800": 1}', content_type="application/json"
    )

    _assert_shown_in_a_french_400(response)
