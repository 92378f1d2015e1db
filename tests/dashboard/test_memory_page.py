"""/memory: the full page has four sections; an htmx request gets one section's partial."""

from __future__ import annotations

import pytest

from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

SECTIONS = {
    "/memory/facts/": ('id="facts-section"', "Ajouter un fait"),
    "/memory/search/": ('id="search-section"', "Sémantique"),
    "/memory/retrieval/": ('id="retrieval-section"', "Nombre maximum de souvenirs"),
    "/memory/notes/": ('id="notes-section"', "Notes fixes"),
}


def test_the_page_has_the_four_sections_in_french(staff_client):
    response = staff_client.get("/memory/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="fr">' in html
    for marker, label in SECTIONS.values():
        assert marker in html
        assert label in html
    for title in ("Faits", "Recherche", "Auto-retrieval", "Notes Obsidian"):
        assert f">{title}" in html


def test_the_navigation_links_memory_costs_admin_and_api(staff_client):
    html = staff_client.get("/memory/").content.decode()
    for href, label in (
        ("/memory/", "Mémoire"),
        ("/costs/", "Coûts"),
        ("/admin/", "Admin"),
        ("/api/docs/", "API"),
    ):
        assert f'href="{href}"' in html
        assert f">{label}</a>" in html


def test_the_page_is_made_for_phones_and_loads_htmx_from_our_static_files(staff_client):
    html = staff_client.get("/memory/").content.decode()
    assert 'name="viewport" content="width=device-width, initial-scale=1"' in html
    assert 'src="/static/dashboard/htmx.min.js"' in html
    assert "https://" not in html and "http://" not in html
    script = staff_client.get("/static/dashboard/htmx.min.js")
    assert script.status_code == 200
    assert b"htmx" in b"".join(script.streaming_content)


def test_the_body_sends_the_csrf_token_on_every_htmx_request(staff_client):
    response = staff_client.get("/memory/")
    token = str(response.context["csrf_token"])
    assert f'hx-headers=\'{{"X-CSRFToken": "{token}"}}\'' in response.content.decode()


@pytest.mark.parametrize("url", list(SECTIONS))
def test_a_section_answers_its_partial_to_htmx(staff_client, url):
    marker, label = SECTIONS[url]
    response = staff_client.get(url, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f"<div {marker}")
    assert label in html
    assert "<html" not in html
    assert "<nav" not in html
    others = [m for u, (m, _) in SECTIONS.items() if u != url]
    assert not any(other in html for other in others)


@pytest.mark.parametrize("url", list(SECTIONS))
def test_a_section_url_without_htmx_is_the_whole_page(staff_client, url):
    response = staff_client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html
    assert all(marker in html for marker, _ in SECTIONS.values())


def test_a_search_url_reloaded_shows_the_page_with_its_results(staff_client):
    from memory.services.facts import fact_store

    fact_store(key="velo", value="Un vélo de course rouge")
    html = staff_client.get("/memory/search/", {"q": "vélo", "mode": "text"}).content.decode()
    assert "<html" in html
    assert "Un vélo de course rouge" in html
    assert "1 résultat pour « <bdi>vélo</bdi> » (texte)" in html


def test_an_expired_session_on_an_htmx_request_redirects_the_whole_page(client):
    response = client.get("/memory/facts/", HTTP_HX_CURRENT_URL="http://testserver/memory/", **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/memory/"
