"""A double submit of a fact's edit form is no conflict with itself (QA 3). Was: a double submit of a fact's edit form (a double click on « Enregistrer »: the
page's htmx form has no hx-sync / hx-disabled-elt; or a plain form re-posted) is refused as
a conflict with itself: « Ce fait a changé depuis que vous l'avez ouvert (un autre onglet,
l'agent ou l'administration) ; maintenant, Valeur : « <what the owner just typed> » ».
The second post writes exactly what the row now holds: there is no change to protect.

dashboard/views.fact_edit -> fact_update(opened=…) -> fact_changed_refuse compares versions
only; memory/admin_forms.OpenedVersionAdminForm.clean the same in the admin."""

from __future__ import annotations

import pytest

from memory.models import Fact
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX
from tests.html_forms import form_post_data

pytestmark = pytest.mark.django_db


def test_the_same_edit_posted_twice_on_memory_is_not_a_conflict_with_itself(staff_client):
    fact_store(key="livre", value="Dune", importance=0.5)
    page = staff_client.get("/memory/facts/livre/edit/", **HTMX).content.decode()
    data = form_post_data(page.replace("<form ", '<form id="edit" ', 1), "edit")
    data["value"] = "Dune, de Frank Herbert"

    first = staff_client.post("/memory/facts/livre/edit/", data, **HTMX)
    second = staff_client.post("/memory/facts/livre/edit/", data, **HTMX)

    assert first.status_code == 200
    assert "a changé depuis" not in second.content.decode()
    assert second.status_code == 200


def test_the_same_admin_change_posted_twice_is_not_a_conflict_with_itself(staff_client):
    fact, _ = fact_store(key="livre", value="Dune", importance=0.5)
    url = f"/admin/memory/fact/{fact.pk}/change/"
    data = form_post_data(staff_client.get(url).content.decode(), "fact_form")
    data["value"] = "Dune (1965)"

    first = staff_client.post(url, data)
    second = staff_client.post(url, data)

    assert first.status_code == 302
    assert "a changé depuis" not in second.content.decode()
    assert second.status_code == 302
    assert Fact.objects.get(pk=fact.pk).value == "Dune (1965)"


def test_the_same_edit_with_a_duration_posted_twice_is_not_a_conflict_with_itself(
    staff_client,
):
    """QA 9b: with a TTL typed (« 7d »), the second post was refused as a change made since,
    showing the owner their own words as someone else's."""
    fact_store(key="livre", value="Dune", importance=0.5)
    page = staff_client.get("/memory/facts/livre/edit/", **HTMX).content.decode()
    data = form_post_data(page.replace("<form ", '<form id="edit" ', 1), "edit")
    data["value"] = "Dune, de Frank Herbert"
    data["ttl"] = "7d"

    first = staff_client.post("/memory/facts/livre/edit/", data, **HTMX)
    expiry = Fact.objects.get(key="livre").expires_at
    second = staff_client.post("/memory/facts/livre/edit/", data, **HTMX)

    assert first.status_code == 200 and second.status_code == 200
    assert "a changé depuis" not in second.content.decode()
    assert Fact.objects.get(key="livre").expires_at == expiry


def test_a_short_duration_sent_again_later_extends_the_expiry():
    """The other side: « 10m » sent again five minutes later is a new edit, not the same."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import Actor
    from memory.services.facts import fact_already_holds

    fact, _ = fact_store(key="four", value="Four allumé", actor=Actor.USER, ttl="10m")
    Fact.objects.filter(pk=fact.pk).update(expires_at=timezone.now() + timedelta(minutes=5))
    fact.refresh_from_db()

    assert not fact_already_holds(fact, Actor.USER, {"ttl": "10m"})
    assert fact_already_holds(fact, Actor.USER, {"ttl": "5m"})
