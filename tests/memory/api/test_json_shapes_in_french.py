"""A body or a field of the wrong JSON shape is said in JSON's words, in French.

DRF named Python's types: « Attendait un dictionnaire, mais a reçu list. », « a reçu
« str » » (black-box QA).
"""

from __future__ import annotations

import pytest

from memory.api.fields import JSON_LIST_EXPECTED, JSON_OBJECT_EXPECTED

pytestmark = pytest.mark.django_db

PYTHON_NAMES = ("list", "dict", "str", "int", "NoneType", "bool")


def _said(response) -> str:
    assert response.status_code == 400, response.content
    return response.content.decode()


@pytest.mark.parametrize("body", [[1, 2], "du texte", 5])
def test_a_body_that_is_no_object_is_said_so(agent_api, body):
    text = _said(agent_api.post("/api/v1/memory/facts", body, format="json"))

    assert JSON_OBJECT_EXPECTED in text
    assert not any(f"reçu {name}" in text or f"« {name} »" in text for name in PYTHON_NAMES)


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/v1/memory/facts", {"key": "velo", "value": "Un vélo", "subjects": "sport"}),
        ("/api/v1/memory/forget", {"topic": "vélo", "ids": "fact:1"}),
        ("/api/v1/memory/messages", {"messages": "x"}),
    ],
)
def test_a_field_that_is_no_list_is_said_so(agent_api, url, body):
    text = _said(agent_api.post(url, body, format="json"))

    assert JSON_LIST_EXPECTED in text
    assert not any(f"« {name} »" in text for name in PYTHON_NAMES)
