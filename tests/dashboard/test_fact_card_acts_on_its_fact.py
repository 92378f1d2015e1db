"""A /memory fact card's buttons act on the fact the card shows, not on whatever holds
its key when the button is pressed (QA 3).

Once the owner forgot « ville », the agent may state « ville » again: the forgotten fact
moves aside under a key of its own and a new fact takes « ville ». The forgotten card still
on the page erased the NEW fact for good (and left the forgotten one), and its « Restaurer »
answered « Fait restauré. » over the live fact, the forgotten one staying forgotten.
"""

from __future__ import annotations

import re

import pytest

from memory.models import Actor, Fact
from memory.services.facts import fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db


def _card_posts(card: str, action: str) -> tuple[str, dict[str, str]]:
    """The URL and the fields the card's form for ``action`` posts (its hidden inputs)."""
    found = re.search(rf'<form method="post" action="([^"]*/{action}/)"(.*?)</form>', card, re.S)
    assert found, card
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', found[2]))
    fields.pop("csrfmiddlewaretoken", None)
    return found[1], fields


@pytest.fixture
def forgotten_card_then_restated(staff_client):
    """The owner forgets « ville » on /memory (its card now offers Restaurer / Effacer
    définitivement); then the agent states « ville » anew."""
    old, _ = fact_store(key="ville", value="Paris, rue secrète", actor=Actor.USER)
    card = staff_client.post("/memory/facts/ville/forget/", {"fact": old.pk}, **HTMX)
    new, _ = fact_store(key="ville", value="Lyon", actor=Actor.AGENT)
    assert new.pk != old.pk and Fact.all_objects.get(pk=old.pk).key != "ville"
    return old, new, card.content.decode()


@pytest.mark.parametrize("headers", [HTMX, {}], ids=["htmx", "plain"])
def test_erase_on_a_forgotten_card_erases_that_fact_not_the_one_stated_since(
    staff_client, forgotten_card_then_restated, headers
):
    old, new, card = forgotten_card_then_restated
    url, fields = _card_posts(card, "erase")

    staff_client.post(url, fields, **headers)

    assert Fact.objects.get(pk=new.pk).value == "Lyon"
    assert not Fact.all_objects.filter(value__contains="rue secrète").exists()


def test_restore_on_a_forgotten_card_restores_that_fact(staff_client, forgotten_card_then_restated):
    old, new, card = forgotten_card_then_restated
    url, fields = _card_posts(card, "restore")

    response = staff_client.post(url, fields, **HTMX)

    old.refresh_from_db()
    assert "Fait restauré" in response.content.decode() and not old.forgotten
    assert Fact.objects.get(pk=new.pk).value == "Lyon"


def test_forget_on_a_card_shown_before_a_rename_forgets_that_fact(staff_client):
    """A live card's « Oublier », pressed after its fact was forgotten and the key stated
    anew elsewhere, does not forget the new fact."""
    old, _ = fact_store(key="ville", value="Paris", actor=Actor.USER)
    card = staff_client.get("/memory/facts/ville/", **HTMX).content.decode()
    url, fields = _card_posts(card, "forget")
    staff_client.post(url, fields, **HTMX)  # another tab forgets it
    new, _ = fact_store(key="ville", value="Lyon", actor=Actor.AGENT)

    staff_client.post(url, fields, **HTMX)  # the stale card's button

    assert not Fact.objects.get(pk=new.pk).forgotten


def test_a_post_without_the_cards_number_acts_by_key_as_before(staff_client):
    fact, _ = fact_store(key="ville", value="Paris", actor=Actor.USER)

    assert staff_client.post("/memory/facts/ville/forget/", **HTMX).status_code == 200

    assert Fact.objects.get(pk=fact.pk).forgotten
