"""The owner states again a key the owner forgot: the forgotten value stays forgotten.

QA: POST /facts on a key forgotten one by one brought the forgotten row back with its
whole history, so the forgotten words (an old account number) were readable through
the agent's revisions, found by a keyword search and written into the export. The
owner's new words start a new fact, as the agent's do; the forgotten one waits under a
key of its own, restorable by the owner.
"""

from __future__ import annotations

import pytest

from memory.models import Fact

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = "/api/v1/memory/facts"
OLD = "Mon ancien numéro de compte est FR76-SECRET-111."
NEW = "Je n'ai plus de compte dans cette banque."


@pytest.fixture
def restated(owner_api):
    assert owner_api.post(FACTS, {"key": "compte", "value": OLD}, format="json").status_code == 201
    assert owner_api.delete(f"{FACTS}/compte").status_code == 204
    answer = owner_api.post(FACTS, {"key": "compte", "value": NEW}, format="json")
    assert answer.status_code in (200, 201), answer.content
    return answer


def test_the_forgotten_words_reach_no_one_through_the_new_fact(restated, owner_api, agent_api):
    assert "FR76" not in restated.content.decode()
    for client in (agent_api, owner_api):
        history = client.get(f"{FACTS}/compte/revisions")
        assert history.status_code == 200
        assert "FR76" not in history.content.decode()
        found = client.get("/api/v1/memory/search", {"q": "FR76-SECRET-111", "mode": "text"})
        assert found.status_code == 200
        assert found.json()["results"] == []
    export = owner_api.get("/api/v1/memory/export")
    assert export.status_code == 200
    assert "FR76" not in b"".join(export.streaming_content).decode()


def test_the_forgotten_fact_stays_forgotten_and_restorable(restated, owner_api):
    live = Fact.objects.get(key="compte")
    assert live.value == NEW
    forgotten = Fact.all_objects.get(value=OLD)
    assert forgotten.forgotten and forgotten.pk != live.pk

    restored = owner_api.post(f"{FACTS}/{forgotten.key}/restore")

    assert restored.status_code == 200, restored.content
    assert Fact.objects.filter(value=OLD).exists()  # both visible, as after the agent's
    assert Fact.objects.get(key="compte").value == NEW
