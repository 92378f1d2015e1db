"""/costs names every purpose the agent's spend is recorded under, in French."""

from __future__ import annotations

import json

import pytest

from agent.models import LlmUsage, Purpose
from dashboard.selectors import PURPOSE_COLOURS
from memory.services.forgetting import topic_forget
from memory.services.forgetting_select import contains_all, topic_terms
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db


def _judge(body: dict) -> str:
    """The forget judge: the memories holding every word of the topic."""
    data = json.loads(body["messages"][-1]["content"])
    terms = topic_terms(data["sujet"])
    return json.dumps(
        {"ids": [s["id"] for s in data["souvenirs"] if contains_all(s["texte"], terms)]}
    )


def test_the_forget_judges_spend_shows_in_french_on_costs(
    staff_client, vector_store, local_embedder, fake_anthropic
):
    fake_anthropic.handler = _judge
    exchange_save("whatsapp", "Le voyage à Zanzibar est réservé pour mars", "Noté.")
    index_everything()
    assert topic_forget(topic="le voyage à Zanzibar", actor="user").selection == "llm"

    page = staff_client.get("/costs/")

    assert LlmUsage.objects.filter(purpose=Purpose.FORGET).exists()
    rows = {row["label"]: row for row in page.context["purpose_rows"]}
    assert rows["Tri de l'oubli"]["colour"] == PURPOSE_COLOURS[Purpose.FORGET]
    assert ">forget<" not in page.content.decode()


def test_every_purpose_has_a_colour_of_its_own():
    assert set(PURPOSE_COLOURS) == set(Purpose)
    assert len(set(PURPOSE_COLOURS.values())) == len(Purpose)
