"""JSON 5 is not the text "5": every text field of the API refuses a number in French.

DRF's CharField turns an int or a float into its text, so ``{"topic": 5}`` forgot
the topic "5" and ``{"key": "k1", "value": 5}`` stored the value "5".
"""

from __future__ import annotations

import pytest

from memory.api.fields import STRING_REQUIRED_MESSAGE
from memory.models import Fact, Forgetting, Message
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db

FACTS = "/api/v1/memory/facts"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key": "k1", "value": 5}, "value"),
        ({"key": "k1", "value": 5.5}, "value"),
        ({"key": 5, "value": "v"}, "key"),
        ({"key": "k1", "value": "v", "channel": 7}, "channel"),
        ({"key": "k1", "value": "v", "ttl": 7}, "ttl"),
        ({"key": "k1", "value": "v", "subjects": [1]}, "subjects"),
    ],
)
def test_a_fact_whose_text_field_is_a_number_is_refused(agent_api, body, field):
    response = agent_api.post(FACTS, body, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"]
    assert not Fact.objects.exists()


def test_the_refusal_says_in_french_that_a_text_is_expected(agent_api):
    response = agent_api.post(FACTS, {"key": "k1", "value": 5}, format="json")

    assert response.json()["extra"]["fields"] == {"value": [STRING_REQUIRED_MESSAGE]}


def test_a_boolean_is_refused_with_the_same_message(agent_api):
    response = agent_api.post(FACTS, {"key": "k1", "value": True}, format="json")

    assert response.json()["extra"]["fields"] == {"value": [STRING_REQUIRED_MESSAGE]}


def test_a_patch_whose_value_is_a_number_is_refused(agent_api):
    fact_store(key="k1", value="un vélo rouge")

    response = agent_api.patch(f"{FACTS}/k1", {"value": 5}, format="json")

    assert response.status_code == 400
    assert Fact.objects.get(key="k1").value == "un vélo rouge"


def test_a_forget_whose_topic_is_a_number_forgets_nothing(agent_api):
    fact_store(key="k5", value="5")

    response = agent_api.post("/api/v1/memory/forget", {"topic": 5}, format="json")

    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {"topic": [STRING_REQUIRED_MESSAGE]}
    assert not Forgetting.objects.exists()
    assert not Fact.objects.get(key="k5").forgotten


@pytest.mark.parametrize(
    "body",
    [
        {"channel": "gateway", "content": 5},
        {"channel": 5, "content": "bonjour"},
        {"channel": "gateway", "content": "bonjour", "idempotency_key": 5},
        {"channel": "gateway", "content": "bonjour", "author": 5},
    ],
)
def test_a_message_whose_text_field_is_a_number_is_not_recorded(agent_api, body):
    response = agent_api.post("/api/v1/memory/messages", body, format="json")

    assert response.status_code == 400, response.content
    assert not Message.objects.exists()


def test_a_message_of_a_batch_whose_content_is_a_number_refuses_the_batch(agent_api):
    body = {"messages": [{"channel": "gateway", "content": 5}]}

    response = agent_api.post("/api/v1/memory/messages", body, format="json")

    assert response.status_code == 400
    assert not Message.objects.exists()


@pytest.mark.parametrize("path", ["/api/v1/memory/context", "/api/v1/memory/preview"])
def test_a_context_or_preview_whose_message_is_a_number_is_refused(agent_api, path):
    response = agent_api.post(path, {"message": 5, "channel": "gateway"}, format="json")

    assert response.status_code == 400
    assert "message" in response.json()["extra"]["fields"]
    assert not Message.objects.exists()


def test_a_form_encoded_fact_still_passes(staff_api):
    response = staff_api.post(
        FACTS, "key=k1&value=5", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 201, response.content
    assert Fact.objects.get(key="k1").value == "5"
