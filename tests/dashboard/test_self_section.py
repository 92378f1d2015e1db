"""The "Moi & objectifs" section of /memory, and the admin of the agent's items."""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, FactKind, RevisionReason
from memory.services.facts import fact_store
from memory.services.self_memory import agent_item_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

SECTION = "/memory/self/"


@pytest.fixture(autouse=True)
def no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def items():
    fact_store(key="ville", value="Il habite à Lyon")
    capability = agent_item_store(
        kind=FactKind.SELF, category="capability", content="Je peux lire le Lobby"
    ).item
    goal = agent_item_store(
        kind=FactKind.GOAL, category="understanding", content="Comprendre les voyages de David"
    ).item
    return capability, goal


def test_the_page_lists_the_items_by_kind_and_category_apart_from_the_facts(staff_client, items):
    html = staff_client.get("/memory/").content.decode()

    self_part = html[html.index('id="self-section"') : html.index('id="recherche"')]
    facts_part = html[html.index('id="facts-section"') : html.index('id="self-section"')]
    for text in ("Moi &amp; objectifs", "Mes objectifs", "Capacité", "Comprendre"):
        assert text in self_part
    assert "Je peux lire le Lobby" in self_part
    assert "Comprendre les voyages de David" in self_part
    assert "Il habite à Lyon" not in self_part
    assert "Il habite à Lyon" in facts_part
    assert "Je peux lire le Lobby" not in facts_part


def test_the_section_is_an_htmx_partial(staff_client, items):
    html = staff_client.get(SECTION, **HTMX).content.decode()
    assert html.startswith('<div id="self-section">')
    assert "<html" not in html


def test_the_owner_adds_an_item_and_a_restatement_adds_nothing(staff_client):
    body = {"category": "preference", "content": "J'aime les questions techniques"}

    first = staff_client.post(SECTION, body, **HTMX).content.decode()
    second = staff_client.post(SECTION, body, **HTMX).content.decode()

    assert "Enregistré." in first
    assert "Déjà connu : rien de nouveau." in second
    [item] = Fact.all_objects.filter(kind=FactKind.SELF)
    assert (item.category, item.value) == ("preference", "J'aime les questions techniques")
    assert item.revisions.get().actor == Actor.USER


def test_edit_delete_with_a_reason_history_and_restore(staff_client, items):
    capability, goal = items
    form = staff_client.get(f"{SECTION}{goal.pk}/edit/", **HTMX).content.decode()
    assert "Comprendre les voyages de David" in form

    edited = staff_client.post(
        f"{SECTION}{goal.pk}/edit/",
        {"category": "connection", "content": "Parler plus souvent avec David"},
        **HTMX,
    )
    assert edited.status_code == 200
    goal.refresh_from_db()
    assert (goal.category, goal.value) == ("connection", "Parler plus souvent avec David")
    assert goal.revisions.first().reason == RevisionReason.EDITED

    refused = staff_client.post(f"{SECTION}{goal.pk}/delete/", {"reason": ""}, **HTMX)
    assert refused.status_code == 422
    deleted = staff_client.post(
        f"{SECTION}{goal.pk}/delete/", {"reason": "objectif atteint"}, **HTMX
    ).content.decode()
    assert "Supprimé (restaurable)." in deleted
    goal.refresh_from_db()
    assert goal.forgotten
    history = staff_client.get(f"{SECTION}{goal.pk}/history/", **HTMX).content.decode()
    assert "objectif atteint" in history
    assert "Oublié par le propriétaire" in history

    staff_client.post(f"{SECTION}{goal.pk}/restore/", **HTMX)
    goal.refresh_from_db()
    assert not goal.forgotten


def test_a_category_of_another_kind_is_refused_on_edit(staff_client, items):
    capability, _ = items
    response = staff_client.post(
        f"{SECTION}{capability.pk}/edit/", {"category": "connection", "content": "x"}, **HTMX
    )
    assert response.status_code == 422
    assert "autre genre" in response.content.decode()


def test_an_owner_fact_is_not_an_item_here(staff_client, items):
    owner = Fact.objects.get()
    assert staff_client.get(f"{SECTION}{owner.pk}/", **HTMX).status_code == 404


def test_the_admin_lists_the_agents_items_apart(staff_client, items):
    capability, goal = items
    agent_page = staff_client.get("/admin/memory/agentitem/").content.decode()
    assert "Je peux lire le Lobby" in agent_page and "Comprendre les voyages" in agent_page
    assert "Il habite à Lyon" not in agent_page
    facts_page = staff_client.get("/admin/memory/fact/").content.decode()
    assert "Il habite à Lyon" in facts_page and "Je peux lire le Lobby" not in facts_page

    added = staff_client.post(
        "/admin/memory/agentitem/add/",
        {
            "kind": "goal",
            "category": "connection",
            "value": "Parler à Mickael",
            "importance": "0.7",
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    item = Fact.all_objects.get(value="Parler à Mickael")
    assert (item.kind, item.category, item.revisions.get().actor) == ("goal", "connection", "admin")
    assert staff_client.get(f"/admin/memory/agentitem/{capability.pk}/change/").status_code == 200
