"""The admin's irreversible action asks first, and its delete says what it does.

Black-box QA: « Effacer définitivement » erased on one POST of the changelist, with no
« Êtes-vous sûr ? » step where Django's own delete has one; and « Supprimer » said the
fact and its revisions « seront supprimés » when it only forgets (restorable)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.models import Fact
from memory.services.facts import fact_store

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:memory_fact_changelist")


def test_erasing_from_the_admin_asks_first_and_erases_nothing_until_confirmed(admin_client):
    fact, _ = fact_store(key="code_portail", value="Le code est 4521")

    page = admin_client.post(CHANGELIST, {"action": "erase_facts", "_selected_action": [fact.pk]})

    assert page.status_code == 200
    html = page.content.decode()
    assert "irréversible" in html and "code_portail" in html, html
    assert 'name="post" value="yes"' in html
    assert Fact.all_objects.filter(pk=fact.pk).exists()

    done = admin_client.post(
        CHANGELIST, {"action": "erase_facts", "_selected_action": [fact.pk], "post": "yes"}
    )

    assert done.status_code == 302
    assert not Fact.all_objects.filter(pk=fact.pk).exists()


def test_the_admin_offers_forgetting_not_a_delete_that_says_it_deletes(admin_client):
    fact, _ = fact_store(key="velo", value="Le vélo est gris")
    changelist = admin_client.get(CHANGELIST).content.decode()
    assert 'value="delete_selected"' not in changelist  # « Oublier les faits sélectionnés »
    assert 'value="forget_facts"' in changelist

    page = admin_client.get(reverse("admin:memory_fact_delete", args=[fact.pk]))

    html = page.content.decode()
    assert page.status_code == 200
    assert "oublié" in html and "restaur" in html, html
    assert "seront supprimés" not in html

    done = admin_client.post(
        reverse("admin:memory_fact_delete", args=[fact.pk]), {"post": "yes"}, follow=True
    )
    assert "oublié" in done.content.decode()
    assert Fact.all_objects.get(pk=fact.pk).forgotten


def test_forgetting_an_agent_item_from_the_admin_goes_back_to_its_own_list(admin_client):
    from memory.services.self_memory import agent_item_store

    item = agent_item_store(
        kind="self", category="capability", content="Je sais lire les notes", actor="agent"
    ).item

    done = admin_client.post(
        reverse("admin:memory_agentitem_delete", args=[item.pk]), {"post": "yes"}
    )

    assert done.status_code == 302
    assert done["Location"] == reverse("admin:memory_agentitem_changelist")
    assert Fact.all_objects.get(pk=item.pk).forgotten


def test_the_admin_refuses_an_expiry_already_past(admin_client):
    """QA: an expiry of 2020 was saved, and the fact left the memory at once as expired (the
    agent may then overwrite it): a fact is forgotten, not expired in the past."""
    from tests.memory.admin_forms import fact_admin_form

    fact, _ = fact_store(key="adm1", value="v")

    response = admin_client.post(
        reverse("admin:memory_fact_change", args=[fact.pk]),
        fact_admin_form(expires_at_0="2020-01-01", expires_at_1="10:00:00"),
    )

    assert response.status_code == 200
    assert "déjà passée" in response.content.decode()
    fact.refresh_from_db()
    assert fact.expires_at is None


def test_erasing_forgets_from_the_admin_asks_first(admin_client):
    from memory.models import Forgetting
    from memory.services.forgetting import topic_forget

    fact_store(key="banque", value="Mon conseiller à la banque est M. Rami")
    forgetting_id = topic_forget(topic="banque", actor="user").forgetting_id
    changelist = reverse("admin:memory_forgetting_changelist")
    selected = {"action": "erase_forgettings", "_selected_action": [forgetting_id]}

    page = admin_client.post(changelist, selected)

    assert page.status_code == 200
    html = page.content.decode()
    assert "irréversible" in html and "1 fait(s)" in html, html
    assert Forgetting.objects.get(pk=forgetting_id).state != "purged"

    assert admin_client.post(changelist, {**selected, "post": "yes"}).status_code == 302
    assert Forgetting.objects.get(pk=forgetting_id).state == "purged"


def test_a_forgets_page_says_what_it_took_in_french(admin_client):
    from memory.services.forgetting import topic_forget

    fact_store(key="banque", value="Mon conseiller à la banque est M. Rami")
    forgetting_id = topic_forget(topic="banque", actor="user").forgetting_id

    html = admin_client.get(
        reverse("admin:memory_forgetting_change", args=[forgetting_id])
    ).content.decode()

    assert "1 fait(s)" in html and "0 message(s)" in html, html
    assert '"exchanges"' not in html
