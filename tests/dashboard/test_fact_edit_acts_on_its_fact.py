"""The /memory edit form saves the fact it was opened on, by its number, not the fact
holding its key when it is saved (QA 4: forgotten since and its key stated anew by the
agent, the owner's edit went onto the agent's new fact)."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.fact_revisions import FACT_FORGOTTEN_SINCE_MESSAGE
from memory.services.facts import fact_forget, fact_store
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


def _form(page: str) -> dict:
    return form_post_data(page.replace("<form ", '<form id="edit" ', 1), "edit")


def test_an_edit_saved_after_a_forget_and_a_restatement_is_about_the_fact_it_opened(
    staff_client,
):
    old, _ = fact_store(key="ville", value="Paris", actor=Actor.USER)
    data = _form(staff_client.get("/memory/facts/ville/edit/", **HTMX).content.decode())
    data["value"] = "Marseille"
    fact_forget(fact=old, actor=Actor.USER)  # another tab
    new, _ = fact_store(key="ville", value="Lyon", actor=Actor.AGENT)
    assert new.pk != old.pk

    first = staff_client.post("/memory/facts/ville/edit/", data, **HTMX)
    page = first.content.decode()
    again = staff_client.post("/memory/facts/ville/edit/", _form(page), **HTMX)

    assert Fact.objects.get(pk=new.pk).value == "Lyon", (
        "the agent's new « ville » got the owner's edit of the fact forgotten "
        f"(second answer {again.status_code})"
    )
    said = FACT_FORGOTTEN_SINCE_MESSAGE.replace("'", "&#x27;")
    assert said in page, "said « a changé » over the other fact instead"


def test_an_edit_saved_after_a_rename_elsewhere_still_saves_its_fact(staff_client):
    fact, _ = fact_store(key="ville", value="Paris", actor=Actor.USER)
    data = _form(staff_client.get("/memory/facts/ville/edit/", **HTMX).content.decode())
    data["value"] = "Marseille"
    from memory.services.facts import fact_update

    fact_update(fact=fact, actor=Actor.USER, key="ville_natale")  # the admin, meanwhile

    first = staff_client.post("/memory/facts/ville/edit/", data, **HTMX)
    assert first.status_code == 422  # changed since: said, not a 404
    again = staff_client.post("/memory/facts/ville/edit/", _form(first.content.decode()), **HTMX)

    assert again.status_code == 200
    assert Fact.objects.get(pk=fact.pk).value == "Marseille"
