"""The Faits section: list, filter, add, inline edit, forget with restore, history."""

from __future__ import annotations

import html as html_lib
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.api.fields import BOOLEAN_EXPECTED
from memory.models import Actor, Fact, RevisionReason
from memory.services.facts import fact_forget, fact_store
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

FACTS = "/memory/facts/"


def test_the_section_shows_every_field_of_a_fact(staff_client):
    fact_store(
        key="blessure",
        value="Épaule droite",
        memory_type="event",
        importance=0.45,
        subjects=["santé", "escalade"],
        channel="whatsapp",
        ttl="7d",
        source="conversation",
    )
    html = staff_client.get(FACTS, **HTMX).content.decode()
    for text in (
        "blessure",
        "Épaule droite",
        "Événement",
        "0,45",
        "santé",
        "escalade",
        "Conversation",
        "whatsapp",
    ):
        assert text in html
    expires = timezone.localtime(Fact.objects.get().expires_at).strftime("%d/%m/%Y")
    assert expires in html


def test_the_filter_box_filters_by_key_or_value(staff_client):
    fact_store(key="sport", value="escalade")
    fact_store(key="food", value="lentilles")
    html = staff_client.get(FACTS, {"filter": "lentil"}, **HTMX).content.decode()
    assert 'data-key="food"' in html
    assert 'data-key="sport"' not in html
    html = staff_client.get(FACTS, {"filter": "zzz"}, **HTMX).content.decode()
    assert "Aucun fait ne correspond à « <bdi>zzz</bdi> »." in html


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"filter": "z" * 601}, "Filtrer : Assurez-vous que cette valeur comporte au plus 500"),
        ({"filter": "\x00"}, "Filtrer : Le caractère nul n’est pas autorisé."),
        ({"forgotten": "oui"}, "Afficher les faits oubliés : " + BOOLEAN_EXPECTED),
    ],
)
def test_an_invalid_filter_shows_its_error_not_every_fact(staff_client, query, said):
    """QA: the invalid filter was dropped without a word and every fact listed, as if all
    matched."""
    fact_store(key="medecin", value="Le docteur Bernard")

    response = staff_client.get(FACTS, query, **HTMX)

    assert response.status_code == 422
    text = html_lib.unescape(response.content.decode())
    assert "Le docteur Bernard" not in text
    assert said in text


def test_forgotten_facts_show_only_when_asked_and_expired_ones_are_marked(staff_client):
    gone, _ = fact_store(key="gone", value="parti")
    fact_forget(fact=gone, actor=Actor.USER)
    old, _ = fact_store(key="old", value="vieux")
    Fact.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(days=1))
    html = staff_client.get(FACTS, **HTMX).content.decode()
    assert 'data-key="gone"' not in html
    assert "expiré" in html
    html = staff_client.get(FACTS, {"forgotten": "on"}, **HTMX).content.decode()
    assert 'data-key="gone"' in html
    assert "Restaurer" in html


def test_adding_a_fact_answers_the_section_with_it(staff_client):
    response = staff_client.post(
        FACTS,
        {
            "key": "chat",
            "value": "Un chat nommé Pixel",
            "memory_type": "fact",
            "subjects": "Pixel, chat",
            "ttl": "",
        },
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Fait « <bdi>chat</bdi> » ajouté." in html
    assert "Un chat nommé Pixel" in html
    fact = Fact.objects.get(key="chat")
    assert fact.subjects == ["pixel", "chat"]
    assert fact.importance == 0.6
    assert fact.revisions.get().actor == Actor.USER


def test_adding_an_existing_key_updates_it(staff_client):
    fact_store(key="ville", value="Lyon")
    response = staff_client.post(
        FACTS, {"key": "ville", "value": "Paris", "memory_type": "fact"}, **HTMX
    )
    assert "Fait « <bdi>ville</bdi> » mis à jour." in response.content.decode()
    assert Fact.objects.get(key="ville").value == "Paris"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"key": "", "value": "v", "memory_type": "fact"}, "Ce champ est obligatoire."),
        (
            {"key": "k", "value": "v", "memory_type": "fact", "importance": "3"},
            "inférieure ou égale à 1",
        ),
        (
            {"key": "k", "value": "v", "memory_type": "fact", "ttl": "bientôt"},
            "Durée de vie invalide",
        ),
        ({"key": "a/b", "value": "v", "memory_type": "fact"}, "ne peut contenir ni"),
        ({"key": "k", "value": "v", "memory_type": "rumeur"}, "Sélectionnez un choix valide"),
    ],
)
def test_a_bad_fact_answers_422_with_the_errors_in_the_form(staff_client, data, message):
    response = staff_client.post(FACTS, data, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    assert message in html
    assert '<details class="add-fact" open>' in html
    assert not Fact.objects.exists()


def test_without_htmx_adding_redirects_back_to_the_section(staff_client):
    response = staff_client.post(FACTS, {"key": "k", "value": "v", "memory_type": "fact"})
    assert response.status_code == 302
    assert response["Location"] == "/memory/#faits"


def test_inline_edit_shows_a_form_then_saves_it(staff_client):
    fact, _ = fact_store(key="sport", value="course", subjects=["sport"], ttl="1d")
    form = staff_client.get(f"{FACTS}sport/edit/", **HTMX)
    assert form.status_code == 200
    html = form.content.decode()
    assert f'id="fact-{fact.pk}"' in html
    assert f'id="id_fact{fact.pk}_value"' in html
    assert "course</textarea>" in html

    response = staff_client.post(
        f"{FACTS}sport/edit/",
        {
            "value": "course et vélo",
            "memory_type": "preference",
            "importance": "0.8",
            "subjects": "sport, vélo",
            "ttl": "",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert "course et vélo" in response.content.decode()
    assert "Enregistré." in response.content.decode()
    fact.refresh_from_db()
    assert (fact.value, fact.memory_type, fact.importance, fact.subjects) == (
        "course et vélo",
        "preference",
        0.8,
        ["sport", "vélo"],
    )
    assert fact.expires_at is not None, "an empty TTL keeps the expiry"


def test_inline_edit_can_remove_the_expiry(staff_client):
    fact, _ = fact_store(key="k", value="v", ttl="1d")
    staff_client.post(
        f"{FACTS}k/edit/",
        {"value": "v", "memory_type": "fact", "importance": "0.6", "no_expiry": "on"},
        **HTMX,
    )
    fact.refresh_from_db()
    assert fact.expires_at is None


def test_inline_edit_errors_answer_422_in_the_row(staff_client):
    fact_store(key="k", value="v")
    response = staff_client.post(
        f"{FACTS}k/edit/", {"value": "", "memory_type": "fact", "importance": "2"}, **HTMX
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "Ce champ est obligatoire." in html
    assert "inférieure ou égale à 1" in html
    assert Fact.objects.get(key="k").value == "v"


def test_cancel_brings_the_card_back(staff_client):
    fact_store(key="k", value="v")
    html = staff_client.get(f"{FACTS}k/", **HTMX).content.decode()
    assert html.startswith('<article class="fact')
    assert "Modifier" in html


def test_forget_asks_for_confirmation_and_can_be_undone(staff_client):
    fact, _ = fact_store(key="secret", value="à oublier")
    card = staff_client.get(FACTS, **HTMX).content.decode()
    assert 'hx-confirm="Oublier le fait « &#x2068;secret&#x2069; » ?' in card

    response = staff_client.post(f"{FACTS}secret/forget/", **HTMX)
    assert response.status_code == 200
    assert "Fait oublié. Vous pouvez le restaurer." in response.content.decode()
    assert "Restaurer" in response.content.decode()
    fact.refresh_from_db()
    assert fact.forgotten is True

    response = staff_client.post(f"{FACTS}secret/restore/", **HTMX)
    assert "Fait restauré." in response.content.decode()
    fact.refresh_from_db()
    assert fact.forgotten is False
    reasons = list(fact.revisions.values_list("reason", flat=True))
    assert reasons[:2] == [RevisionReason.RESTORED, RevisionReason.FORGOTTEN]


def test_forget_is_post_only(staff_client):
    fact_store(key="k", value="v")
    assert staff_client.get(f"{FACTS}k/forget/").status_code == 405
    assert Fact.objects.get(key="k").forgotten is False


def test_history_is_shown_on_demand(staff_client):
    fact_store(key="ville", value="Lyon")
    fact_store(key="ville", value="Paris")
    html = staff_client.get(f"{FACTS}ville/history/", **HTMX).content.decode()
    assert "Historique de « <bdi>ville</bdi> »" in html
    assert "<del><bdi>Lyon</bdi></del> → <ins><bdi>Paris</bdi></ins>" in html
    assert "Créé" in html and "Modifié" in html


def test_an_unknown_key_is_a_404(staff_client):
    for url in ("nope/", "nope/edit/", "nope/history/"):
        assert staff_client.get(f"{FACTS}{url}", **HTMX).status_code == 404
    assert staff_client.post(f"{FACTS}nope/forget/", **HTMX).status_code == 404


def test_a_value_over_the_limit_is_refused_in_french_not_cut_by_the_browser(staff_client):
    """A textarea with maxlength silently cuts a pasted text: the limit is the server's."""
    from memory.models import FACT_VALUE_MAX_CHARS

    page = staff_client.get(FACTS, **HTMX).content.decode()
    assert 'name="value"' in page and "maxlength" not in page.split('name="value"')[1][:200]
    too_long = "x" * (FACT_VALUE_MAX_CHARS + 1)
    data = {"key": "long", "value": too_long, "memory_type": "fact"}
    response = staff_client.post(FACTS, data, **HTMX)
    assert response.status_code == 422
    assert f"limitée à {FACT_VALUE_MAX_CHARS:_}".replace("_", "\u202f") in response.content.decode()
    assert not Fact.objects.exists()


def test_inline_edit_refuses_a_lifetime_and_no_expiry_together(staff_client):
    """QA: « 1d » and « Sans expiration » together were saved as « jamais », silently."""
    fact, _ = fact_store(key="k", value="v", ttl="7d")
    expires_at = fact.expires_at

    response = staff_client.post(
        f"{FACTS}k/edit/",
        {"value": "v", "memory_type": "fact", "importance": "0.6", "ttl": "1d", "no_expiry": "on"},
        **HTMX,
    )

    assert response.status_code == 422
    assert "pas les deux" in response.content.decode()
    fact.refresh_from_db()
    assert fact.expires_at == expires_at
