"""The fact list's editable columns write only what the owner changed there (QA).

Changing an importance in /admin/memory/fact/ saved the row with the value as the page
showed it: a value the API or /memory changed while the list was open was put back."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.facts import fact_store, fact_update
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
