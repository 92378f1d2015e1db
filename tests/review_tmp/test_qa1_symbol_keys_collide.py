"""QA1: keys that differ only by their symbols are one key for the agent's statements.

fact_key_folded drops every character that is not a letter or a digit, so
« niveau_c++ » and « niveau_c# » fold to « niveau_c », and every key made of
symbols alone (« 🎂 », « 💊 », « % ») folds to the empty key. The README promises
the agent's key is the owner's whatever its letter case, accents, width or the
separators *between its words*: these are different keys, yet the agent's second
statement silently overwrites the value of the first, unrelated fact.
"""

import pytest

from tests.memory.api.conftest import agent_api, agent_token, agent_user  # noqa: F401

pytestmark = pytest.mark.django_db

FACTS = "/api/memory/facts"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("niveau_c++", "Marie est experte en C++ (10 ans)"), ("niveau_c#", "Marie débute en C#")),
        (("🎂", "Anniversaire de Marie le 12 mars"), ("💊", "Prendre le Levothyrox chaque matin")),
    ],
)
def test_a_key_differing_by_its_symbols_does_not_overwrite_another_fact(agent_api, first, second):
    response = agent_api.post(FACTS, {"key": first[0], "value": first[1]}, format="json")
    assert response.status_code == 201, response.content

    response = agent_api.post(FACTS, {"key": second[0], "value": second[1]}, format="json")
    assert response.status_code in (201, 400), response.content

    from memory.models import Fact

    # The first fact still says what it said.
    assert Fact.objects.filter(value=first[1]).exists(), list(
        Fact.objects.values_list("key", "value")
    )


def test_deleting_a_key_never_stored_does_not_forget_another_fact(agent_api):
    """« note_-- » was never stored: its DELETE forgets « note_++ » (both fold to « note »)."""
    from memory.models import Fact

    response = agent_api.post(
        FACTS, {"key": "note_++", "value": "Note très positive pour Chez Lulu"}, format="json"
    )
    assert response.status_code == 201, response.content

    agent_api.delete(f"{FACTS}/note_--")

    assert not Fact.all_objects.get(key="note_++").forgotten
