"""The Recherche section: semantic / text toggle, results, empty and error states."""

from __future__ import annotations

import socket

import pytest

from memory.models import Message
from memory.services.facts import fact_store
from memory.services.indexing import index_rows
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

SEARCH = "/memory/search/"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_text_mode_shows_score_kind_channel_date_and_excerpt(staff_client):
    Message.objects.create(channel="whatsapp", role="user", content="Séance de kiné jeudi")
    html = staff_client.get(SEARCH, {"q": "kine", "mode": "text"}, **HTMX).content.decode()
    assert "1 résultat pour « <bdi>kine</bdi> » (texte)" in html
    assert 'class="score"' in html
    assert ">Message<" in html
    assert "whatsapp" in html
    assert "Séance de kiné jeudi" in html
    created = Message.objects.get().created_at
    from django.utils import timezone

    assert timezone.localtime(created).strftime("%d/%m/%Y %H:%M") in html


def test_semantic_mode_finds_an_indexed_fact(staff_client, vector_store, local_embedder):
    fact, _ = fact_store(key="animal", value="Mickael a un chat roux nommé Pixel.")
    index_rows("fact", [fact.pk])
    html = staff_client.get(
        SEARCH, {"q": "son animal de compagnie", "mode": "semantic"}, **HTMX
    ).content.decode()
    assert "(sémantique)" in html
    assert ">Fait<" in html
    assert "Mickael a un chat roux nommé Pixel." in html


def test_no_result_is_said_plainly(staff_client):
    html = staff_client.get(SEARCH, {"q": "introuvable", "mode": "text"}, **HTMX).content.decode()
    assert "Aucun résultat pour « <bdi>introuvable</bdi> »." in html


def test_semantic_unavailable_shows_a_message_and_a_text_search_link(staff_client, settings):
    from memory.stores.embedders import embedder_reset

    embedder_reset()
    settings.VOYAGE_API_KEY = "clé"
    settings.VOYAGE_BASE_URL = f"http://127.0.0.1:{closed_port()}/v1"
    settings.VOYAGE_MAX_RETRIES = 0
    try:
        response = staff_client.get(SEARCH, {"q": "épaule", "mode": "semantic"}, **HTMX)
    finally:
        embedder_reset()
    assert response.status_code == 200
    html = response.content.decode()
    assert "La recherche sémantique est indisponible" in html
    assert "Chercher en mode texte" in html
    assert "q=%C3%A9paule&amp;mode=text" in html


def test_a_query_too_long_is_refused_in_the_form(staff_client):
    html = staff_client.get(SEARCH, {"q": "x" * 600, "mode": "text"}, **HTMX).content.decode()
    assert "au plus 500 caractères" in html


def test_the_toggle_keeps_the_chosen_mode(staff_client):
    html = staff_client.get(SEARCH, {"q": "x", "mode": "text"}, **HTMX).content.decode()
    assert 'value="text" checked' in html
    assert 'value="semantic" checked' not in html
