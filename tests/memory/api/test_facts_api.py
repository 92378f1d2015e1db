"""GET/POST /api/memory/facts, GET/PATCH/DELETE /facts/<key>, restore and revisions."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from makilab.exception_handlers import VALIDATION_MESSAGE
from memory.api.pagination import MAX_PAGE_SIZE
from memory.api.serializers import UNKNOWN_FIELD_MESSAGE
from memory.models import Actor, Fact, FactRevision, RevisionReason
from memory.services.facts import fact_forget, fact_store

pytestmark = pytest.mark.django_db

FACTS = "/api/memory/facts"


def test_it_lists_active_facts_with_their_fields(agent_api):
    fact_store(key="user_name", value="Mickael", memory_type="identity", subjects=["Mickael"])
    response = agent_api.get(FACTS)
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    fact = body["results"][0]
    assert fact["key"] == "user_name"
    assert fact["value"] == "Mickael"
    assert fact["memory_type"] == "identity"
    assert fact["importance"] == 1.0
    assert fact["subjects"] == ["mickael"]
    assert fact["forgotten"] is False
    assert {"expires_at", "source", "channel", "index_state", "created_at"} <= set(fact)


def test_forgotten_and_expired_facts_are_hidden_unless_the_owner_asks(agent_api, owner_api):
    fact_store(key="kept", value="gardé")
    forgotten, _ = fact_store(key="gone", value="oublié")
    fact_forget(fact=forgotten, actor=Actor.USER)
    expired, _ = fact_store(key="old", value="expiré")
    Fact.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(minutes=1))

    keys = {f["key"] for f in agent_api.get(FACTS).json()["results"]}
    assert keys == {"kept"}
    keys = {f["key"] for f in agent_api.get(FACTS, {"include_expired": "true"}).json()["results"]}
    assert keys == {"kept", "old"}
    keys = {
        f["key"]
        for f in owner_api.get(
            FACTS, {"include_forgotten": "true", "include_expired": "true"}
        ).json()["results"]
    }
    assert keys == {"kept", "gone", "old"}


def test_the_search_parameter_filters_by_key_or_value(agent_api):
    fact_store(key="sport", value="course à pied le dimanche")
    fact_store(key="food", value="aime les lentilles")
    results = agent_api.get(FACTS, {"search": "lentilles"}).json()["results"]
    assert [f["key"] for f in results] == ["food"]


def test_the_page_size_is_capped(agent_api):
    for index in range(MAX_PAGE_SIZE + 5):
        Fact.objects.create(key=f"fact_{index:03d}", value="x")
    body = agent_api.get(FACTS, {"page_size": 10_000}).json()
    assert body["count"] == MAX_PAGE_SIZE + 5
    assert len(body["results"]) == MAX_PAGE_SIZE
    assert body["next"]


def test_post_creates_a_fact_with_the_type_default_importance(staff_api):
    response = staff_api.post(
        FACTS,
        {"key": "goal_marathon", "value": "Courir un marathon", "memory_type": "goal"},
        format="json",
    )
    assert response.status_code == 201, response.content
    fact = Fact.objects.get(key="goal_marathon")
    assert fact.importance == 0.9
    assert response.json()["importance"] == 0.9
    revision = fact.revisions.get()
    assert (revision.actor, revision.reason) == (Actor.USER, RevisionReason.CREATED)


def test_the_agent_token_writes_as_the_agent(agent_api):
    response = agent_api.post(FACTS, {"key": "pet", "value": "un chat"}, format="json")
    assert response.status_code == 201
    assert Fact.objects.get(key="pet").revisions.get().actor == Actor.AGENT


def test_post_with_a_ttl_sets_the_expiry(agent_api):
    before = timezone.now()
    response = agent_api.post(FACTS, {"key": "k", "value": "v", "ttl": "7d"}, format="json")
    assert response.status_code == 201
    expires_at = Fact.objects.get(key="k").expires_at
    assert before + timedelta(days=7) <= expires_at <= timezone.now() + timedelta(days=7)


def test_post_on_an_existing_key_updates_it_and_keeps_the_old_value(agent_api):
    fact_store(key="city", value="Lyon", actor=Actor.AGENT)
    response = agent_api.post(FACTS, {"key": "city", "value": "Paris"}, format="json")
    assert response.status_code == 200
    assert response.json()["value"] == "Paris"
    old_values = list(
        FactRevision.objects.filter(fact__key="city").values_list("old_value", flat=True)
    )
    assert "Lyon" in old_values


def test_the_agent_token_cannot_overwrite_what_the_owner_set(agent_api, staff_client):
    fact_store(key="city", value="Lyon", importance=0.9, actor=Actor.USER)
    response = agent_api.patch(
        f"{FACTS}/city", {"value": "Paris", "importance": 0.1}, format="json"
    )
    assert response.status_code == 200
    assert (response.json()["value"], response.json()["importance"]) == ("Lyon", 0.9)
    response = staff_client.patch(
        f"{FACTS}/city", {"value": "Paris"}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["value"] == "Paris"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"value": "sans clé"}, "key"),
        ({"key": "k"}, "value"),
        ({"key": "k", "value": ""}, "value"),
        ({"key": "k", "value": "v", "memory_type": "rumeur"}, "memory_type"),
        ({"key": "k", "value": "v", "importance": 1.5}, "importance"),
        ({"key": "k", "value": "v", "importance": -0.1}, "importance"),
        ({"key": "k", "value": "v", "importance": "beaucoup"}, "importance"),
        ({"key": "k", "value": "v", "ttl": "demain"}, "ttl"),
        ({"key": "k", "value": "v", "subjects": "pas une liste"}, "subjects"),
        ({"key": "k", "value": "v", "subjects": ["x" * 101]}, "subjects"),
        ({"key": "a/b", "value": "v"}, "key"),
        ({"key": "k" * 201, "value": "v"}, "key"),
        ({"key": "k", "value": "v" * 10_001}, "value"),
        ({"key": "k", "value": "v", "source": "rumeur"}, "source"),
    ],
)
def test_post_refuses_bad_input_with_a_message_per_field(agent_api, body, field):
    response = agent_api.post(FACTS, body, format="json")
    assert response.status_code == 400, response.content
    payload = response.json()
    assert payload["message"] == VALIDATION_MESSAGE
    assert field in payload["extra"]["fields"]
    assert payload["extra"]["fields"][field]
    assert not Fact.objects.exists()


def test_post_names_an_unknown_field(agent_api):
    response = agent_api.post(FACTS, {"key": "k", "value": "v", "valeur": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {"valeur": [UNKNOWN_FIELD_MESSAGE]}


def test_malformed_json_is_a_400_not_a_500(agent_api):
    response = agent_api.generic("POST", FACTS, "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["message"]


def test_a_body_over_the_size_limit_is_refused_with_413(agent_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    body = json.dumps({"key": "big", "value": "x" * 4096})
    response = agent_api.generic("POST", FACTS, body, content_type="application/json")
    assert response.status_code == 413
    assert "octets" in response.json()["message"]
    assert not Fact.objects.exists()


def test_the_owner_gets_one_fact_even_forgotten(owner_api):
    fact, _ = fact_store(key="nick", value="Mika")
    fact_forget(fact=fact, actor=Actor.USER)
    response = owner_api.get(f"{FACTS}/nick")
    assert response.status_code == 200
    assert response.json()["forgotten"] is True


def test_an_unknown_key_is_a_404_with_a_french_message(agent_api, owner_api):
    for method in ("get", "patch", "delete"):
        response = getattr(agent_api, method)(f"{FACTS}/nope", format="json")
        assert response.status_code == 404
        assert "nope" in response.json()["message"]
    assert owner_api.post(f"{FACTS}/nope/restore").status_code == 404
    assert owner_api.post(f"{FACTS}/nope/erase").status_code == 404


def test_patch_changes_only_the_given_fields(staff_api):
    fact_store(key="sport", value="course", memory_type="preference", subjects=["sport"])
    response = staff_api.patch(f"{FACTS}/sport", {"importance": 0.2}, format="json")
    assert response.status_code == 200, response.content
    fact = Fact.objects.get(key="sport")
    assert fact.importance == 0.2
    assert (fact.value, fact.memory_type, fact.subjects) == ("course", "preference", ["sport"])
    assert fact.revisions.first().changes == {"importance": [0.7, 0.2]}


def test_patch_ttl_null_removes_the_expiry(agent_api):
    fact_store(key="k", value="v", ttl="1h", actor=Actor.AGENT)
    response = agent_api.patch(f"{FACTS}/k", {"ttl": None}, format="json")
    assert response.status_code == 200
    assert Fact.objects.get(key="k").expires_at is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"importance": None}, "importance"),
        ({"importance": 2}, "importance"),
        ({"memory_type": "x"}, "memory_type"),
        ({"value": ""}, "value"),
        ({"ttl": "0d"}, "ttl"),
        ({"key": "renamed"}, "key"),
        ({}, "non_field_errors"),
    ],
)
def test_patch_refuses_bad_input(agent_api, body, field):
    fact_store(key="k", value="v")
    response = agent_api.patch(f"{FACTS}/k", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"]
    assert Fact.objects.get(key="k").value == "v"


def test_delete_forgets_the_fact_and_restore_brings_it_back(agent_api, owner_api):
    fact_store(key="secret", value="à oublier")
    response = agent_api.delete(f"{FACTS}/secret")
    assert response.status_code == 204
    fact = Fact.objects.get(key="secret")
    assert fact.forgotten is True
    assert "secret" not in {f["key"] for f in agent_api.get(FACTS).json()["results"]}
    # Forgetting twice is harmless; to the agent's token the key is now never stored.
    assert agent_api.delete(f"{FACTS}/secret").status_code == 404
    assert owner_api.delete(f"{FACTS}/secret").status_code == 204

    # Undoing a forget is the owner's.
    assert agent_api.post(f"{FACTS}/secret/restore").status_code == 403
    response = owner_api.post(f"{FACTS}/secret/restore")
    assert response.status_code == 200
    assert response.json()["forgotten"] is False
    assert "secret" in {f["key"] for f in agent_api.get(FACTS).json()["results"]}


def test_revisions_list_the_history_newest_first(agent_api, owner_api):
    fact_store(key="city", value="Lyon", actor=Actor.AGENT)
    agent_api.patch(f"{FACTS}/city", {"value": "Paris"}, format="json")
    agent_api.delete(f"{FACTS}/city")
    response = owner_api.get(f"{FACTS}/city/revisions")  # forgotten: the owner's to see
    assert response.status_code == 200
    reasons = [r["reason"] for r in response.json()["results"]]
    assert reasons == ["forgotten", "edited", "extracted"]
    edited = response.json()["results"][1]
    assert (edited["old_value"], edited["new_value"], edited["actor"]) == ("Lyon", "Paris", "agent")
