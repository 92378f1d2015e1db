"""The admin's form of an agent's item never overwrites unseen what changed since it
opened (QA 3: changing only the category put back a text corrected elsewhere since)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactKind
from memory.services.facts import fact_update
from memory.services.self_memory import agent_item_store
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def opened(staff_client):
    goal = agent_item_store(
        kind=FactKind.GOAL, category="understanding", content="Comprendre les voyages de David"
    ).item
    url = f"/admin/memory/agentitem/{goal.pk}/change/"
    data = form_post_data(staff_client.get(url).content.decode(), "agentitem_form")
    return goal, url, data


def test_a_category_change_keeps_a_text_corrected_since(staff_client, opened):
    goal, url, data = opened
    fact_update(fact=goal, actor=Actor.USER, value="Comprendre les voyages de Léa")

    response = staff_client.post(url, {**data, "category": "connection"})

    assert response.status_code == 302, response.content.decode()[:2000]
    goal.refresh_from_db()
    assert (goal.category, goal.value) == ("connection", "Comprendre les voyages de Léa")


def test_a_text_changed_since_is_refused_in_french_then_taken_when_saved_again(
    staff_client, opened
):
    goal, url, data = opened
    fact_update(fact=goal, actor=Actor.USER, value="Comprendre les voyages de Léa")

    response = staff_client.post(url, {**data, "value": "Parler avec David"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "a changé depuis" in page and "Comprendre les voyages de Léa" in page
    assert Fact.all_objects.get(pk=goal.pk).value == "Comprendre les voyages de Léa"
    again = form_post_data(page, "agentitem_form")
    assert again["value"] == "Parler avec David"
    assert staff_client.post(url, again).status_code == 302
    assert Fact.all_objects.get(pk=goal.pk).value == "Parler avec David"
