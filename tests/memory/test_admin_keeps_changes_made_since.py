"""The admin's fact form never overwrites unseen what changed since it opened (QA 2: the API
changed the value while the form was open, and saving the form put the old one back)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.facts import fact_forget, fact_store, fact_update
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def opened(staff_client):
    """The change form of « danse » as the owner opened it, before anything changed."""
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)
    url = f"/admin/memory/fact/{fact.pk}/change/"
    data = form_post_data(staff_client.get(url).content.decode(), "fact_form")
    return fact, url, data


def test_a_field_changed_elsewhere_is_kept_when_the_owner_saves_another(staff_client, opened):
    fact, url, data = opened
    fact_update(fact=fact, actor=Actor.USER, importance=0.9)  # the API, meanwhile

    response = staff_client.post(url, {**data, "channel": "whatsapp"})

    assert response.status_code == 302, response.content.decode()[:2000]
    fact.refresh_from_db()
    assert (fact.channel, fact.importance, fact.value) == ("whatsapp", 0.9, "salsa")


def test_a_field_changed_since_is_refused_in_french_then_taken_when_saved_again(
    staff_client, opened
):
    fact, url, data = opened
    fact_update(fact=fact, actor=Actor.USER, value="house")  # the API, meanwhile

    response = staff_client.post(url, {**data, "value": "tango"})

    assert response.status_code == 200  # the form again, with its error
    page = response.content.decode()
    assert "a changé depuis" in page and "« house »" in page
    assert Fact.objects.get(pk=fact.pk).value == "house"
    again = form_post_data(page, "fact_form")
    assert again["value"] == "tango"  # what the owner typed is kept
    assert staff_client.post(url, again).status_code == 302
    assert Fact.objects.get(pk=fact.pk).value == "tango"


def test_a_fact_forgotten_since_the_form_opened_is_not_revived_by_its_save(staff_client, opened):
    """The form showed the fact live; another tab forgot it; saving an importance
    revived it unseen (fact_update revives). Refused in French; restoring does that."""
    fact, url, data = opened
    fact_forget(fact=fact, actor=Actor.USER)

    response = staff_client.post(url, {**data, "importance": "0.9"})

    assert response.status_code == 200
    assert "oublié depuis que vous l" in response.content.decode()
    stored = Fact.all_objects.get(pk=fact.pk)
    assert stored.forgotten and stored.importance == 0.5


def test_a_fact_shown_forgotten_is_still_edited_and_revived_as_before(staff_client):
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)
    fact_forget(fact=fact, actor=Actor.USER)
    url = f"/admin/memory/fact/{fact.pk}/change/"
    data = form_post_data(staff_client.get(url).content.decode(), "fact_form")

    response = staff_client.post(url, {**data, "value": "tango"})

    assert response.status_code == 302
    stored = Fact.all_objects.get(pk=fact.pk)
    assert (stored.forgotten, stored.value) == (False, "tango")


def test_saved_again_after_the_refusal_the_fact_is_restored_with_the_change(staff_client, opened):
    fact, url, data = opened
    fact_forget(fact=fact, actor=Actor.USER)
    refused = staff_client.post(url, {**data, "importance": "0.9"})

    again = form_post_data(refused.content.decode(), "fact_form")
    assert staff_client.post(url, again).status_code == 302

    stored = Fact.all_objects.get(pk=fact.pk)
    assert (stored.forgotten, stored.importance) == (False, 0.9)
