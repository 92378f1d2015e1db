"""The admin's change form hands the version its check read to fact_update, which compares
it on the row it locks: a write or a forget landing between the form's check (clean) and
its save is refused on the form in French, never overwritten or revived unseen (QA 9b)."""

from __future__ import annotations

import pytest

from memory.admin_forms import AgentItemAdminForm, FactAdminForm
from memory.models import Actor, Fact, FactKind
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.self_memory import agent_item_store
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def after_check(monkeypatch):
    """Runs ``write`` right after the form's check, as another thread's commit landing
    between clean() and save_model would."""

    def patch(form_class, write):
        check = form_class.clean

        def clean(self):
            cleaned = check(self)
            write()
            return cleaned

        monkeypatch.setattr(form_class, "clean", clean)

    return patch


def _opened(staff_client, fact: Fact, model: str) -> tuple[str, dict[str, str]]:
    url = f"/admin/memory/{model}/{fact.pk}/change/"
    return url, form_post_data(staff_client.get(url).content.decode(), f"{model}_form")


def test_a_value_the_agent_writes_after_the_check_is_not_overwritten(staff_client, after_check):
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5, actor=Actor.AGENT)
    url, data = _opened(staff_client, fact, "fact")
    after_check(
        FactAdminForm,
        lambda: fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.AGENT, value="house"),
    )

    response = staff_client.post(url, {**data, "value": "tango"})

    assert response.status_code == 200  # the form again, with its error
    page = response.content.decode()
    assert "a changé depuis" in page and "« house »" in page
    assert Fact.objects.get(pk=fact.pk).value == "house"
    again = form_post_data(page, "fact_form")
    assert again["value"] == "tango"  # what the owner typed is kept
    assert staff_client.post(url, again).status_code == 302  # saved again, knowingly
    assert Fact.objects.get(pk=fact.pk).value == "tango"


def test_a_fact_forgotten_after_the_check_is_not_revived_by_the_save(staff_client, after_check):
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)
    url, data = _opened(staff_client, fact, "fact")
    after_check(
        FactAdminForm, lambda: fact_forget(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER)
    )

    response = staff_client.post(url, {**data, "importance": "0.9"})

    assert response.status_code == 200
    assert "oublié depuis que vous l" in response.content.decode()  # the apostrophe escaped
    stored = Fact.all_objects.get(pk=fact.pk)
    assert stored.forgotten and stored.importance == 0.5


def test_an_agent_item_text_corrected_after_the_check_is_not_overwritten(staff_client, after_check):
    goal = agent_item_store(
        kind=FactKind.GOAL, category="understanding", content="Comprendre les voyages de David"
    ).item
    url, data = _opened(staff_client, goal, "agentitem")
    corrected = "Comprendre les voyages de Léa"
    after_check(
        AgentItemAdminForm,
        lambda: fact_update(
            fact=Fact.all_objects.get(pk=goal.pk), actor=Actor.USER, value=corrected
        ),
    )

    response = staff_client.post(url, {**data, "value": "Parler avec David"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "a changé depuis" in page and corrected in page
    assert Fact.all_objects.get(pk=goal.pk).value == corrected


def test_a_field_the_owner_left_written_after_the_check_is_kept_with_the_save(
    staff_client, after_check
):
    """The form's rule, on the row as it is at the save: a change elsewhere to a field the
    owner did not change is no conflict (both are kept), as when it lands before the check."""
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)
    url, data = _opened(staff_client, fact, "fact")
    after_check(
        FactAdminForm,
        lambda: fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER, importance=0.9),
    )

    response = staff_client.post(url, {**data, "channel": "whatsapp"})

    assert response.status_code == 302, response.content.decode()[:2000]
    stored = Fact.objects.get(pk=fact.pk)
    assert (stored.channel, stored.importance, stored.value) == ("whatsapp", 0.9, "salsa")
