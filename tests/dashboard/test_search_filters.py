"""The filters of the Recherche section: French labels, the same filters as the API and the tools."""

from __future__ import annotations

import pytest

from memory.services.facts import fact_store
from memory.services.search import memory_search, search_filters_build
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

SEARCH = "/memory/search/"


@pytest.fixture
def bikes():
    fact_store(
        key="velo_derailleur",
        value="Le dérailleur de son vélo est cassé",
        memory_type="fact",
        subjects=["vélo"],
        channel="whatsapp",
    )
    fact_store(
        key="velo_route",
        value="Il veut acheter un vélo de route",
        memory_type="goal",
        subjects=["achat"],
        channel="telegram",
    )


def _search(client, **params) -> str:
    return client.get(SEARCH, {"q": "vélo", "mode": "text", **params}, **HTMX).content.decode()


def test_the_form_has_the_filters_with_french_labels(staff_client):
    html = staff_client.get(SEARCH, **HTMX).content.decode()

    for label in ("Filtres", "Canal", "Type de fait", "Sujets", "Depuis le", "Avant le"):
        assert label in html
    assert 'name="memory_type"' in html and ">Objectif<" in html
    assert 'type="date" name="since"' in html and 'type="date" name="until"' in html


@pytest.mark.parametrize(
    ("params", "shown", "hidden"),
    [
        ({"memory_type": "goal"}, "velo_route", "velo_derailleur"),
        ({"subjects": "Vélo, santé"}, "velo_derailleur", "velo_route"),
        ({"channel": "telegram"}, "velo_route", "velo_derailleur"),
    ],
)
def test_the_filters_narrow_the_results(staff_client, bikes, params, shown, hidden):
    html = _search(staff_client, **params)

    assert "1 résultat pour « <bdi>vélo</bdi> » (texte), filtrés." in html
    assert shown in html and hidden not in html
    # The chosen filters stay in the form.
    for value in params.values():
        assert value in html


def test_the_page_builds_the_filters_the_tools_and_the_api_build(staff_client, bikes):
    params = {"channel": "whatsapp", "subjects": "vélo", "since": "2020-01-01"}
    expected = memory_search(
        query="vélo",
        mode="text",
        limit=20,
        filters=search_filters_build(**params),
    )

    html = _search(staff_client, **params)

    assert [hit.key for hit in expected] == ["velo_derailleur"]
    assert "velo_derailleur" in html and "velo_route" not in html


def test_a_date_range_that_ends_before_it_starts_is_refused_in_french(staff_client, bikes):
    html = _search(staff_client, since="2026-05-01", until="2026-04-01")

    assert "La fin doit être après le début." in html
    assert "résultat" not in html


def test_nothing_found_with_filters_says_so(staff_client, bikes):
    html = _search(staff_client, channel="signal")

    assert "Aucun résultat pour « <bdi>vélo</bdi> » avec ces filtres." in html


@pytest.mark.parametrize("since", ["2026-13-45", "2026-02-30"])
def test_a_search_with_a_date_that_does_not_exist_is_a_form_error(staff_client, since):
    from tests.dashboard.conftest import HTMX

    response = staff_client.get(
        "/memory/search/", {"q": "vélo", "mode": "text", "since": since}, **HTMX
    )

    assert response.status_code == 422
    assert "Saisissez une date valide" in response.content.decode()


def test_a_refused_filter_names_its_field(staff_client, bikes):
    """QA: `since=2026-13-01` said « Ce champ est obligatoire. Saisissez une date valide. »
    without naming the fields."""
    html = _search(staff_client, since="2026-13-01", q="")

    assert "Depuis le : Saisissez une date valide." in html, html
    assert "Recherche : Ce champ est obligatoire." in html, html
