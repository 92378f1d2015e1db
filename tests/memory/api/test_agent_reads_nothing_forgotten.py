"""What the owner forgot is reachable by no path: not by the agent's token either.

The agent's token is how an agent (an LLM) reads the memory. The owner's scope
sees a forgotten fact (to restore it); the agent's sees nothing of it: reading
it by key or its history answers 404 as for a key never stored, and asking the
list for the forgotten facts is refused in French.
"""

from __future__ import annotations

import pytest

import memory.api.facts as facts_api
from memory.models import Actor, Fact, FactKind
from memory.selectors import FACT_NOT_FOUND_MESSAGE
from memory.services.facts import fact_forget, fact_store
from memory.services.self_memory import agent_item_store

pytestmark = pytest.mark.django_db

SECRET = "mon ancienne adresse est 12 rue des Lilas"


@pytest.fixture
def forgotten():
    fact, _ = fact_store(key="ex_adresse", value=SECRET, actor="user")
    fact_store(key="ex_adresse", value=SECRET + ", Lyon", actor="user")  # a history line
    fact_forget(fact=fact, actor="user")
    return fact


@pytest.mark.parametrize(
    "path", ["/api/v1/memory/facts/ex_adresse", "/api/v1/memory/facts/ex_adresse/revisions"]
)
def test_the_agents_token_gets_404_for_a_forgotten_fact_and_its_history(
    agent_api, owner_api, forgotten, path
):
    response = agent_api.get(path)

    assert response.status_code == 404, response.content
    assert "Lilas" not in response.content.decode()
    assert "Aucun fait" in response.json()["message"]
    # The owner still sees it, to restore it.
    assert "Lilas" in owner_api.get(path).content.decode()


def test_the_agents_token_cannot_list_the_forgotten_facts(agent_api, owner_api, forgotten):
    response = agent_api.get("/api/v1/memory/facts", {"include_forgotten": "true"})

    assert response.status_code == 403, response.content
    assert "Lilas" not in response.content.decode()
    assert "propriétaire" in response.json()["message"]
    listed = owner_api.get("/api/v1/memory/facts", {"include_forgotten": "true"}).json()
    assert [f["key"] for f in listed["results"]] == ["ex_adresse"]


def test_the_agents_token_cannot_list_its_own_forgotten_items(agent_api):
    item = agent_item_store(
        kind=FactKind.SELF,
        category="limitation",
        content="je confonds Lilas et Roses",
        actor="user",
    ).item
    fact_forget(fact=item, actor="user")

    response = agent_api.get("/api/v1/memory/facts", {"kind": "self", "include_forgotten": "1"})

    assert response.status_code == 403, response.content
    assert "Lilas" not in response.content.decode()


def test_a_live_fact_reads_the_same_for_the_agent(agent_api):
    fact_store(key="ville", value="Nantes", actor="user")

    assert agent_api.get("/api/v1/memory/facts/ville").json()["value"] == "Nantes"
    assert agent_api.get("/api/v1/memory/facts/ville/revisions").status_code == 200
    listed = agent_api.get("/api/v1/memory/facts", {"include_forgotten": "false"}).json()
    assert [f["key"] for f in listed["results"]] == ["ville"]


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_a_forgotten_key_answers_the_agent_as_a_key_never_stored(agent_api, forgotten, method):
    """Nothing tells the agent's token that the key was there: same status, same words."""
    body = {"importance": 0.5} if method == "patch" else None
    never = getattr(agent_api, method)("/api/v1/memory/facts/jamais_vu", body, format="json")
    gone = getattr(agent_api, method)("/api/v1/memory/facts/ex_adresse", body, format="json")

    assert gone.status_code == never.status_code == 404
    assert gone.json()["message"] == never.json()["message"].replace("jamais_vu", "ex_adresse")
    assert Fact.all_objects.get(key="ex_adresse").forgotten


@pytest.mark.parametrize("if_match", [False, True])
def test_an_agent_patch_racing_the_owners_forget_leaves_the_fact_forgotten(
    agent_api, monkeypatch, if_match
):
    """QA: the view found the fact live, the owner's forget landed before the service locked
    it, and the agent's write (no If-Match) revived it; with If-Match the 412 told the agent
    the forgotten value. Undoing a forget is the owner's alone: 404, as for a key never
    stored, and the fact stays forgotten."""
    fact_store(key="ex_adresse", value=SECRET, actor=Actor.AGENT)
    read = facts_api.fact_or_404

    def read_then_the_owner_forgets(key, *, actor):
        fact = read(key, actor=actor)
        fact_forget(fact=Fact.all_objects.get(pk=fact.pk), actor=Actor.USER)
        return fact

    headers = {}
    if if_match:
        headers["HTTP_IF_MATCH"] = agent_api.get("/api/v1/memory/facts/ex_adresse")["ETag"]
    monkeypatch.setattr(facts_api, "fact_or_404", read_then_the_owner_forgets)

    response = agent_api.patch(
        "/api/v1/memory/facts/ex_adresse", {"importance": 0.9}, format="json", **headers
    )

    assert response.status_code == 404, response.content
    assert response.json()["message"] == FACT_NOT_FOUND_MESSAGE.format(key="ex_adresse")
    assert "Lilas" not in response.content.decode()
    fact = Fact.all_objects.get(key="ex_adresse")
    assert fact.forgotten and fact.importance != 0.9
    listed = agent_api.get("/api/v1/memory/facts").json()["results"]
    assert "ex_adresse" not in [f["key"] for f in listed]
