"""QA1: a fact value (or subject) made only of invisible characters is stored.

A value of spaces is refused in French (« Ce champ ne peut être vide. »), and a
key holding an invisible character is refused, but a value or a subject made only
of a zero-width space (U+200B), a BOM (U+FEFF) or a word joiner (U+2060) is
stored with a 201: a blank fact the prompt block then carries, a blank subject
the pages show.
"""

import pytest

from tests.memory.api.conftest import agent_api, agent_token, agent_user  # noqa: F401

pytestmark = pytest.mark.django_db

FACTS = "/api/memory/facts"


def test_blank_value_of_spaces_is_refused(agent_api):
    response = agent_api.post(FACTS, {"key": "vide", "value": "   "}, format="json")
    assert response.status_code == 400


@pytest.mark.parametrize("blank", ["\u200b", "\ufeff\u200b\u2060"])
def test_a_value_made_of_invisible_characters_is_refused_too(agent_api, blank):
    response = agent_api.post(FACTS, {"key": "invisible", "value": blank}, format="json")
    assert response.status_code == 400, response.content


def test_a_subject_made_of_an_invisible_character_is_refused(agent_api):
    response = agent_api.post(
        FACTS, {"key": "sujet_invisible", "value": "x", "subjects": ["\u200b"]}, format="json"
    )
    assert response.status_code == 400, response.content
