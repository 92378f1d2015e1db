"""The API's token sent as MCP clients send it: ``Authorization: Bearer <token>``.

The MCP endpoint took it; the REST API answered 401 « Informations d'authentification
non fournies » although a token was sent (black-box QA).
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"


def test_the_api_takes_the_token_after_bearer_as_after_token(agent_token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {agent_token.key}")

    assert (
        client.post(FACTS, {"key": "velo", "value": "Un vélo rouge"}, format="json").status_code
        == 201
    )
    assert client.get(f"{FACTS}/velo").json()["value"] == "Un vélo rouge"


def test_a_wrong_bearer_token_is_refused_as_a_wrong_token_is():
    answers = []
    for keyword in ("Bearer", "Token"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"{keyword} pas-un-jeton")
        response = client.get(FACTS)
        answers.append((response.status_code, response.json()["message"]))

    assert answers[0] == answers[1] == (401, "Token non valide.")
