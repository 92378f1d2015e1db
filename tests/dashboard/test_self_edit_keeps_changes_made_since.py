"""Editing one of the agent's items on /memory writes only what the owner changed there,
over the item as the form opened it (QA 3: changing only the category put back a text
corrected elsewhere since the form opened)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactKind
from memory.services.facts import fact_update
from memory.services.self_memory import agent_item_store
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db

SECTION = "/memory/self/"


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def opened(staff_client):
    """A goal's edit form as the owner opened it, before anything changed."""
    goal = agent_item_store(
        kind=FactKind.GOAL, category="understanding", content="Comprendre les voyages de David"
    ).item
    url = f"{SECTION}{goal.pk}/edit/"
    page = staff_client.get(url, **HTMX).content.decode()
    return goal, url, form_post_data(page, f"self-edit-{goal.pk}")


def test_a_category_change_keeps_a_text_corrected_since_the_form_opened(staff_client, opened):
    """As the fact edit does: the change made since is said first, then saving again
    writes the category alone, over the corrected text."""
    goal, url, data = opened
    fact_update(fact=goal, actor=Actor.USER, value="Comprendre les voyages de Léa")  # another tab

    refused = staff_client.post(url, {**data, "category": "connection"}, **HTMX)

    assert refused.status_code == 422
    assert "Contenu : « Comprendre les voyages de Léa »" in refused.content.decode()
    goal.refresh_from_db()
    assert (goal.category, goal.value) == ("understanding", "Comprendre les voyages de Léa")
    again = form_post_data(refused.content.decode(), f"self-edit-{goal.pk}")
    assert (again["category"], again["content"]) == ("connection", "Comprendre les voyages de Léa")

    saved = staff_client.post(url, again, **HTMX)

    assert saved.status_code == 200 and "Modifié." in saved.content.decode()
    goal.refresh_from_db()
    assert (goal.category, goal.value) == ("connection", "Comprendre les voyages de Léa")


def test_a_category_change_without_a_version_keeps_the_text_changed_since(staff_client, opened):
    """A page from before the version input still writes only what the owner changed."""
    goal, url, data = opened
    del data["opened"]
    fact_update(fact=goal, actor=Actor.USER, value="Comprendre les voyages de Léa")

    response = staff_client.post(url, {**data, "category": "connection"}, **HTMX)

    assert response.status_code == 200, response.content.decode()[:2000]
    goal.refresh_from_db()
    assert (goal.category, goal.value) == ("connection", "Comprendre les voyages de Léa")


def test_a_text_changed_since_is_refused_in_french_then_taken_when_saved_again(
    staff_client, opened
):
    goal, url, data = opened
    fact_update(fact=goal, actor=Actor.USER, value="Comprendre les voyages de Léa")

    response = staff_client.post(url, {**data, "content": "Parler avec David"}, **HTMX)

    assert response.status_code == 422
    page = response.content.decode()
    assert "a changé depuis" in page and "Comprendre les voyages de Léa" in page
    assert Fact.all_objects.get(pk=goal.pk).value == "Comprendre les voyages de Léa"
    again = form_post_data(page, f"self-edit-{goal.pk}")
    assert again["content"] == "Parler avec David"  # what the owner typed is kept
    assert staff_client.post(url, again, **HTMX).status_code == 200
    assert Fact.all_objects.get(pk=goal.pk).value == "Parler avec David"


def test_an_unreadable_version_is_said_as_such_and_the_form_comes_back(staff_client, opened):
    goal, url, data = opened

    response = staff_client.post(
        url, {**data, "opened": "pas-une-version", "content": "Parler avec David"}, **HTMX
    )

    assert response.status_code == 422
    page = response.content.decode()
    assert "illisible" in page
    again = form_post_data(page, f"self-edit-{goal.pk}")
    assert again["content"] == "Parler avec David"
    assert staff_client.post(url, again, **HTMX).status_code == 200
    assert Fact.all_objects.get(pk=goal.pk).value == "Parler avec David"


def test_a_post_without_the_forms_opening_values_is_written_as_before(staff_client, opened):
    goal, url, _ = opened

    response = staff_client.post(
        url, {"category": "connection", "content": "Parler avec David"}, **HTMX
    )

    assert response.status_code == 200
    goal.refresh_from_db()
    assert (goal.category, goal.value) == ("connection", "Parler avec David")
