"""The Auto-retrieval section: toggle and sliders saved as they move, preview, log."""

from __future__ import annotations

import sys

import pytest

from memory.models import MemoryRetrieval, MemorySettings
from tests.dashboard.conftest import HTMX

pytestmark = pytest.mark.django_db

SETTINGS = "/memory/retrieval/settings/"
PREVIEW = "/memory/retrieval/preview/"


def test_sliders_take_their_ranges_from_the_model(staff_client):
    html = staff_client.get("/memory/retrieval/", **HTMX).content.decode()
    assert 'name="max_results" id="id_max_results" min="1" max="10" step="1" value="4"' in html
    assert 'name="min_score" id="id_min_score" min="0.3" max="0.8" step="0.05" value="0.5"' in html
    assert (
        'name="live_max_results" id="id_live_max_results" min="0" max="20" step="1" value="10"'
        in html
    )


def test_moving_a_slider_saves_and_answers_a_status_line(staff_client):
    response = staff_client.post(
        SETTINGS,
        {
            "auto_retrieve_enabled": "on",
            "max_results": "7",
            "min_score": "0.45",
            "live_max_results": "3",
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert (
        "Enregistré : auto-retrieval activé, 7 souvenirs au plus, score ≥ 0,45, "
        "3 extraits des salons observés au plus." in response.content.decode()
    )
    settings = MemorySettings.load()
    assert (
        settings.max_results,
        settings.min_score,
        settings.auto_retrieve_enabled,
        settings.live_max_results,
    ) == (7, 0.45, True, 3)


def test_the_observed_rooms_extracts_can_be_turned_off(staff_client):
    response = staff_client.post(
        SETTINGS, {"max_results": "4", "min_score": "0.5", "live_max_results": "0"}, **HTMX
    )
    assert "aucun extrait des salons observés" in response.content.decode()
    assert MemorySettings.load().live_max_results == 0


def test_unchecking_the_toggle_disables_auto_retrieval(staff_client):
    response = staff_client.post(
        SETTINGS, {"max_results": "4", "min_score": "0.5", "live_max_results": "10"}, **HTMX
    )
    assert "auto-retrieval désactivé" in response.content.decode()
    assert MemorySettings.load().auto_retrieve_enabled is False


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"max_results": "11", "min_score": "0.5"}, "inférieure ou égale à 10"),
        ({"max_results": "4", "min_score": "0.9"}, "inférieure ou égale à 0,8"),
        ({"max_results": "4", "min_score": "0.1"}, "supérieure ou égale à 0,3"),
        ({"max_results": "beaucoup", "min_score": "0.5"}, "nombre entier"),
        (
            {"max_results": "4", "min_score": "0.5", "live_max_results": "21"},
            "inférieure ou égale à 20",
        ),
        (
            {"max_results": "4", "min_score": "0.5", "live_max_results": "-1"},
            "supérieure ou égale à 0",
        ),
    ],
)
def test_out_of_range_values_are_refused_with_422(staff_client, data, message):
    response = staff_client.post(SETTINGS, {"live_max_results": "10", **data}, **HTMX)
    assert response.status_code == 422
    assert "Non enregistré" in response.content.decode()
    assert message in response.content.decode()
    assert MemorySettings.load().max_results == 4
    assert MemorySettings.load().live_max_results == 10


def test_the_log_shows_the_latest_injections(staff_client):
    MemoryRetrieval.objects.create(
        channel="whatsapp",
        message_preview="Comment va mon épaule ?",
        memories=[
            {
                "id": "fact:3",
                "kind": "fact",
                "sources": {
                    "semantic": {"rank": 1, "score": 0.812},
                    "fts": {"rank": 2, "score": 4.2},
                },
                "rrf": 0.03,
                "text": "Blessure à l'épaule en mars",
            },
        ],
        notes=[{"path": "Profil.md", "chars": 200}],
        tokens_added=57,
        timings_ms={"embed": 11.2, "semantic": 2.5},
        total_ms=18.7,
        failed_sources={"notes": "timeout"},
    )
    html = staff_client.get("/memory/retrieval/", **HTMX).content.decode()
    for text in (
        "Comment va mon épaule ?",
        "Blessure à l&#x27;épaule en mars",
        "sémantique 0,812",
        "mots-clés 4,200",
        "57 tokens",
        "18,7 ms",
        "Profil.md",
        "Sources indisponibles : notes (pas de réponse à temps)",
        "plongement 11,2 ms",
        "sémantique 2,5 ms",
    ):
        assert text in html, text


def test_the_log_is_empty_at_first(staff_client):
    html = staff_client.get("/memory/retrieval/", **HTMX).content.decode()
    assert "Aucune injection pour l'instant" in html


def test_the_preview_says_unavailable_when_the_retrieval_module_is_missing(
    staff_client, monkeypatch
):
    monkeypatch.setitem(sys.modules, "memory.services.retrieval", None)
    response = staff_client.get(PREVIEW, {"message": "bonjour", "channel": "dashboard"}, **HTMX)
    assert response.status_code == 200
    assert "Aperçu indisponible" in response.content.decode()
    page = staff_client.get("/memory/").content.decode()
    assert "Aperçu indisponible : le module d'auto-retrieval n'est pas encore installé." in page


def test_the_preview_shows_what_the_retrieval_would_inject(
    staff_client, vector_store, local_embedder
):
    retrieval = pytest.importorskip("memory.services.retrieval")
    if not hasattr(retrieval, "auto_retrieve_preview"):
        pytest.skip("memory.services.retrieval has no auto_retrieve_preview yet")
    from memory.services.facts import fact_store
    from memory.services.indexing import index_rows

    fact, _ = fact_store(key="blessure", value="Blessure à l'épaule droite", memory_type="event")
    index_rows("fact", [fact.pk])
    expected = retrieval.auto_retrieve_preview(
        message="Comment va mon épaule ?", channel="dashboard"
    )
    response = staff_client.get(
        PREVIEW, {"message": "Comment va mon épaule ?", "channel": "dashboard"}, **HTMX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Aperçu indisponible" not in html
    assert f"{expected.tokens_added} tokens ajoutés" in html
    for memory in expected.memories:
        assert str(memory["text"])[:40].replace("'", "&#x27;") in html


@pytest.mark.parametrize("channel", ["a/b", "x" * 65, "  "])
def test_the_preview_refuses_a_channel_the_api_refuses(staff_client, channel):
    from tests.dashboard.conftest import HTMX

    response = staff_client.get(
        "/memory/retrieval/preview/",
        {"message": "Comment va mon épaule ?", "channel": channel},
        **HTMX,
    )

    assert response.status_code == 422
    assert "canal" in response.content.decode().lower()


def test_the_preview_of_an_empty_message_says_why(staff_client):
    from tests.dashboard.conftest import HTMX

    response = staff_client.get(
        "/memory/retrieval/preview/", {"message": "", "channel": "dashboard"}, **HTMX
    )

    assert response.status_code == 422
    assert "Message : Ce champ est obligatoire." in response.content.decode()


def test_a_refused_setting_names_its_field(staff_client):
    """QA: « Non enregistré : Saisissez un nombre entier. Ce champ est obligatoire. Ce champ
    est obligatoire. »: the owner could not tell which setting was wrong."""
    response = staff_client.post(SETTINGS, {"max_results": "abc"}, **HTMX)

    html = response.content.decode()
    assert "Nombre maximum de souvenirs : Saisissez un nombre entier." in html, html
    assert "Score minimum : Ce champ est obligatoire." in html, html


def test_a_preview_with_only_who_the_agent_is_does_not_say_nothing_is_injected(
    staff_client, vector_store, local_embedder
):
    """QA: « 159 tokens ajoutés » then « Rien ne serait injecté pour ce message. » above the
    injected block: the agent's self and goals go in every block."""
    from memory.models import FactKind
    from memory.services.self_memory import agent_item_store

    agent_item_store(kind=FactKind.SELF, category="context", content="Je m'appelle Maki.")

    html = staff_client.get(
        PREVIEW,
        {"message": "Quelle est la capitale de l'Australie ?", "channel": "dashboard"},
        **HTMX,
    ).content.decode()

    assert "Maki" in html
    assert "Rien ne serait injecté" not in html
    assert "Aucun souvenir ne serait injecté" in html
