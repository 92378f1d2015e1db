"""The fact list's editable columns write only what the owner changed there (QA).

Changing an importance in /admin/memory/fact/ saved the row with the value as the page
showed it: a value the API or /memory changed while the list was open was put back."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.forgetting import topic_forget
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db

LIST = "/admin/memory/fact/"


def _opened(client) -> dict:
    return form_post_data(client.get(LIST).content.decode(), "changelist-form")


def _set(data: dict, field: str, value: str) -> dict:
    [name] = [k for k in data if k.endswith(f"-{field}") and not k.startswith("initial-")]
    return data | {name: value, "_save": "Enregistrer"}


def test_an_importance_change_keeps_a_value_changed_since_the_list_opened(staff_client):
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)
    data = _opened(staff_client)
    fact_update(fact=fact, actor=Actor.USER, value="house")

    response = staff_client.post(LIST, _set(data, "importance", "0.9"))

    assert response.status_code == 302, response.content.decode()[:2000]
    fact.refresh_from_db()
    assert (fact.value, fact.importance) == ("house", 0.9)


def test_a_value_typed_in_the_list_is_still_saved(staff_client):
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)

    response = staff_client.post(LIST, _set(_opened(staff_client), "value", "tango"))

    assert response.status_code == 302
    assert Fact.objects.get(pk=fact.pk).value == "tango"


def _set_row(data: dict, fact: Fact, field: str, value: str) -> dict:
    """``data`` with ``field`` of the row of ``fact`` set to ``value``."""
    [prefix] = [
        k.removesuffix("-id") for k, v in data.items() if k.endswith("-id") and v == str(fact.pk)
    ]
    return data | {f"{prefix}-{field}": value, "_save": "Enregistrer"}


def test_the_list_saves_its_other_rows_after_a_forget_took_one_of_them(staff_client):
    """QA 3: « Corrigez l'erreur ci-dessous » with the error on a hidden id, nothing saved,
    and no way out but reloading the list (the owner's typing lost)."""
    danse, _ = fact_store(key="danse", value="salsa", importance=0.5)
    livre, _ = fact_store(key="livre", value="Dune", importance=0.5)
    data = _opened(staff_client)
    topic_forget(topic="salsa", actor=Actor.USER, only=[f"fact:{danse.pk}"])  # meanwhile

    response = staff_client.post(LIST, _set_row(data, livre, "importance", "0.9"), follow=True)

    page = response.content.decode()
    assert response.redirect_chain, page[:3000]
    assert Fact.objects.get(pk=livre.pk).importance == 0.9
    forgotten = Fact.all_objects.get(pk=danse.pk)
    assert forgotten.forgetting_id is not None and forgotten.importance == 0.5
    assert "Une ligne n&#x27;est plus dans la liste" in page and "salsa" not in page


def test_a_change_typed_on_a_row_forgotten_since_is_not_written_and_is_said(staff_client):
    danse, _ = fact_store(key="danse", value="salsa", importance=0.5)
    data = _opened(staff_client)
    fact_forget(fact=danse, actor=Actor.USER)

    response = staff_client.post(LIST, _set_row(data, danse, "importance", "0.9"), follow=True)

    page = response.content.decode()
    forgotten = Fact.all_objects.get(pk=danse.pk)
    assert forgotten.forgotten and forgotten.importance == 0.5
    assert "est oublié : sa modification n&#x27;a pas été enregistrée" in page
    assert "a été modifié" not in page


def test_a_value_typed_on_a_stale_list_is_refused_over_one_changed_since_then_taken(staff_client):
    fact, _ = fact_store(key="danse", value="salsa", importance=0.5)
    data = form_post_data(staff_client.get(LIST).content.decode(), "changelist-form")
    # Meanwhile, another tab (/memory) corrects the value.
    fact_update(fact=fact, actor=Actor.USER, value="house")

    response = staff_client.post(LIST, _set_row(data, fact, "value", "tango"), follow=True)

    page = response.content.decode()
    assert Fact.objects.get(pk=fact.pk).value == "house", "the change made since was overwritten"
    assert "Changé depuis l&#x27;ouverture de la liste" in page and "« house »" in page
    again = form_post_data(page, "changelist-form") | {"_save": "Enregistrer"}
    assert staff_client.post(LIST, again).status_code == 302
    assert Fact.objects.get(pk=fact.pk).value == "tango"  # taken once seen
