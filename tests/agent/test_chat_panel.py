"""The dashboard chat panel: mission_control, each reply with the memories it was given."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.models import MemorySettings, Message
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_rows
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    fact, _ = fact_store(key="velo_couleur", value="Son vélo de course est rouge")
    index_rows(KIND_FACT, [fact.id])
    MemorySettings.objects.update_or_create(pk=1, defaults={"min_score": 0.3})
    return fake_anthropic


def test_the_page_needs_a_staff_login(client):
    response = client.get(reverse("agent:chat"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_page_shows_the_panel_in_french(staff_client):
    response = staff_client.get(reverse("agent:chat"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Discussion" in html
    assert "canal mission_control" in html
    assert "Aucun message sur ce canal" in html
    assert 'hx-post="/chat/send/"' in html


def test_sending_returns_the_turn_with_its_injected_memories(world, staff_client):
    world.script(text_message("Ton vélo de course est rouge."))

    response = staff_client.post(
        reverse("agent:chat-send"),
        {"message": "De quelle couleur est mon vélo ?"},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "Ton vélo de course est rouge." in html
    assert "De quelle couleur est mon vélo ?" in html
    assert "injecté" in html
    assert "Son vélo de course est rouge" in html  # the memory, shown under the reply
    question = Message.objects.get(role="user")
    assert (question.channel, question.author) == ("mission_control", "owner")


def test_the_history_shows_each_reply_with_its_memories(world, staff_client):
    world.script(text_message("Rouge."))
    staff_client.post(reverse("agent:chat-send"), {"message": "Mon vélo est de quelle couleur ?"})

    html = staff_client.get(reverse("agent:chat")).content.decode()

    assert "Mon vélo est de quelle couleur ?" in html
    assert "Rouge." in html
    assert "Son vélo de course est rouge" in html
    assert "1 appel LLM" in html


def test_without_a_key_the_message_is_kept_and_the_reason_shown(staff_client, settings):
    settings.ANTHROPIC_API_KEY = ""
    settings.AGENT_COALESCE_SECONDS = 0

    response = staff_client.post(
        reverse("agent:chat-send"), {"message": "Bonjour ?"}, HTTP_HX_REQUEST="true"
    )

    html = response.content.decode()
    assert "Aucun LLM n&#x27;est configuré" in html
    assert "Bonjour ?" in html
    assert Message.objects.filter(role="user", content="Bonjour ?").count() == 1


def test_an_empty_message_is_refused_in_place(staff_client):
    response = staff_client.post(
        reverse("agent:chat-send"), {"message": "  "}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 422
    assert response["HX-Retarget"] == "#chat-form-errors"
    assert "Ce champ est obligatoire." in response.content.decode()
    assert Message.objects.count() == 0


def test_in_an_observed_room_the_panel_says_why_there_is_no_answer(staff_client, settings):
    """QA: with mission_control observed, a message got an empty turn (the agent does not
    answer an observed room, by design) and the owner was told nothing."""
    from memory.models import ChannelSettings

    settings.AGENT_COALESCE_SECONDS = 0
    ChannelSettings.objects.create(channel="mission_control", observed=True)

    response = staff_client.post(
        reverse("agent:chat-send"), {"message": "Tu es là ?"}, HTTP_HX_REQUEST="true"
    )

    html = response.content.decode()
    assert "est observé" in html and 'class="alert"' in html
    assert Message.objects.filter(role="user", content="Tu es là ?").count() == 1
