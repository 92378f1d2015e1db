"""Defects a black-box QA pass of /memory reported: the facts count, the owner's fields,
owner-supplied text echoed in notices."""

from __future__ import annotations

import re

import pytest

from memory.models import Actor, Fact
from memory.services.facts import fact_store, fact_update
from tests.dashboard.conftest import HTMX, forget_confirmed
from tests.dashboard.test_bidi_isolation import RLO, assert_isolated

pytestmark = pytest.mark.django_db

COUNT_OOB = re.compile(r'<span id="facts-count" class="count" hx-swap-oob="true"[^>]*>\s*(\d+)')


def _count_oob(response) -> int:
    found = COUNT_OOB.search(response.content.decode())
    assert found, "the answer does not refresh the header's count"
    return int(found.group(1))


@pytest.fixture
def two_facts():
    return [
        fact_store(key=key, value=value)[0]
        for key, value in (("ville", "Lyon"), ("sport", "escalade"))
    ]


# --- 1. The header's count -------------------------------------------------------------


def test_the_count_says_what_it_counts_and_the_filter_leaves_it(staff_client, two_facts):
    html = staff_client.get("/memory/").content.decode()
    assert "affichés" not in re.search(r'<h2 id="faits-title">.*?</h2>', html, re.S).group(0)
    assert re.search(r'id="facts-count"[^>]*>\s*2\b', html)
    assert "Faits actifs : ni oubliés ni expirés" in html
    filtered = staff_client.get("/memory/?filter=Lyon").content.decode()
    assert re.search(r'id="facts-count"[^>]*>\s*2\b', filtered)  # what the memory holds


def test_a_forget_and_a_restore_refresh_the_count(staff_client, two_facts):
    assert _count_oob(staff_client.post("/memory/facts/ville/forget/", **HTMX)) == 1
    assert _count_oob(staff_client.post("/memory/facts/ville/restore/", **HTMX)) == 2


def test_an_erase_refreshes_the_count(staff_client, two_facts):
    assert _count_oob(staff_client.post("/memory/facts/sport/erase/", **HTMX)) == 1


def test_an_edit_that_ends_a_facts_expiry_refreshes_the_count(staff_client, two_facts):
    from datetime import timedelta

    from django.utils import timezone

    Fact.objects.filter(key="sport").update(expires_at=timezone.now() - timedelta(days=1))
    response = staff_client.post(
        "/memory/facts/sport/edit/",
        {"value": "escalade", "memory_type": "fact", "importance": "0.5", "no_expiry": "on"},
        **HTMX,
    )
    assert response.status_code == 200
    assert _count_oob(response) == 2


def test_a_topic_forget_and_its_undo_refresh_the_count(staff_client, two_facts):
    assert _count_oob(forget_confirmed(staff_client, "Lyon", **HTMX)) == 1
    from memory.models import Forgetting

    forgetting = Forgetting.objects.get()
    restored = staff_client.post(f"/memory/forget/{forgetting.pk}/restore/", **HTMX)
    assert _count_oob(restored) == 2


def test_a_plain_request_gets_no_out_of_band_copy(staff_client, two_facts):
    """Without htmx the page is whole: one count, no second element of the same id."""
    response = staff_client.post("/memory/forget/preview/", {"topic": "Lyon"})
    assert response.content.decode().count('id="facts-count"') == 1


# --- 2. The fields the owner holds ------------------------------------------------------


def test_a_fact_says_which_fields_the_owner_holds(staff_client):
    fact = fact_store(key="ville", value="Lyon", actor=Actor.AGENT)[0]
    card = staff_client.get("/memory/facts/ville/", **HTMX).content.decode()
    assert "tenu par vous" not in card.lower()
    fact_update(fact=fact, actor=Actor.USER, value="Lyon 3e", importance=0.9)
    card = staff_client.get("/memory/facts/ville/", **HTMX).content.decode()
    held = re.search(r'class="owned"[^>]*>(.*?)</div>', card, re.S)
    assert held, card
    text = re.sub(r"<[^>]+>", "", held.group(1))
    assert "Tenu par vous" in text and "valeur" in text and "importance" in text
    assert "type" not in text and "l'agent" in text
    edit = staff_client.get("/memory/facts/ville/edit/", **HTMX).content.decode()
    assert 'class="owned"' in edit


# --- 5. Owner-supplied text echoed in a sentence is isolated ---------------------------


def test_a_vague_topic_is_echoed_isolated_in_the_refusal(staff_client):
    response = staff_client.post("/memory/forget/preview/", {"topic": f"tout {RLO}ça"}, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    assert "trop vague" in html
    assert f"« <bdi>tout {RLO}ça</bdi> »" in html
    assert_isolated(html)


def test_a_key_is_echoed_isolated_in_the_added_notice(staff_client):
    """A key in right-to-left letters (an override is refused in a new key) sits in its
    isolate: the guillemet after it belongs to the sentence."""
    response = staff_client.post(
        "/memory/facts/", {"key": "מפתח", "value": "w", "memory_type": "fact"}, **HTMX
    )
    assert "Fait « <bdi>מפתח</bdi> » ajouté." in response.content.decode()


def test_a_keys_confirmations_isolate_it(staff_client):
    fact = fact_store(key="cle", value="v")[0]
    Fact.all_objects.filter(pk=fact.pk).update(key=f"cle{RLO}x")
    html = staff_client.get("/memory/facts/", **HTMX).content.decode()
    # A confirm() dialog is plain text: the first-strong isolate (U+2068 … U+2069).
    assert f"Oublier le fait « &#x2068;cle{RLO}x&#x2069; » ?" in html
    assert f"Effacer définitivement le fait « &#x2068;cle{RLO}x&#x2069; »" in html
