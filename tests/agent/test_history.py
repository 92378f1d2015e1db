"""One history: what the LLM receives as the conversation is what retrieval counts as seen.

Through the real loop and the fake Anthropic server, inspecting the request bodies.
"""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection

from agent.loop import handle_message
from memory.models import Job, MemorySettings, Message, Summary
from memory.services.messages import message_save
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

# Greedy: the block's own preamble names its end marker.
BLOCK = re.compile(r"<<<MEMOIRE (\w+)>>>(.*)<<<FIN MEMOIRE \1>>>", re.S)


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    MemorySettings.objects.update_or_create(pk=1, defaults={"min_score": 0.3})
    return fake_anthropic


def _fenced(system: str) -> str:
    """The text inside the fenced memory block of a system prompt ("" when none)."""
    found = BLOCK.search(system)
    return found.group(2) if found else ""


def test_an_exchange_compacted_away_is_injected_by_retrieval(world):
    """Compacted messages are not sent to the LLM, so retrieval may bring them back."""
    past = past_exchange(
        "whatsapp", "Je me suis fait mal à l'épaule en escalade", "Aïe, repose ton épaule."
    )
    Message.objects.filter(channel="whatsapp").update(compacted=True)
    world.script(text_message("À l'épaule, en escalade."))

    result = handle_message(channel="whatsapp", text="Je me suis fait mal à l'épaule comment ?")

    request = world.last
    assert all("escalade" not in str(m["content"]) for m in request.messages)
    assert f"message:{past.id}" in [m["id"] for m in result.retrieval.memories]
    assert "escalade" in _fenced(request.system)


def test_what_retrieval_counts_as_seen_is_exactly_the_history_sent(world):
    """Compacted, tool and system messages, the window and its first turn: both agree."""
    MemorySettings.objects.filter(pk=1).update(history_length=4)
    for topic in ("le jardin", "le vélo", "la cuisine", "le piano"):
        past_exchange("whatsapp", f"Parlons de {topic}", f"Bien sûr, {topic}.")
    Message.objects.filter(content__contains="le jardin").update(compacted=True)
    message_save(channel="whatsapp", role="system", source="system", content="Rappel du matin")
    message_save(channel="whatsapp", role="tool", source="tool", content="Résultat d'outil")
    world.script(text_message("Oui."))

    result = handle_message(channel="whatsapp", text="Tu te souviens de ce que j'ai dit du vélo ?")

    # The last 4 uncompacted messages, tool messages aside; the history starts
    # with a user turn, so the lone reply on the cuisine is not sent.
    assert [m["content"] for m in world.last.messages] == [
        "Parlons de le piano",
        "Bien sûr, le piano.",
        "[Message système] Rappel du matin\n\nTu te souviens de ce que j'ai dit du vélo ?",
    ]
    assert [m.content for m in result.retrieval.history] == [
        "Parlons de le piano",
        "Bien sûr, le piano.",
        "Rappel du matin",
        "Tu te souviens de ce que j'ai dit du vélo ?",
    ]
    # The exchange on the bike was not sent: retrieval injects it.
    assert "le vélo" in _fenced(world.last.system)


@pytest.mark.django_db(transaction=True)
def test_a_user_message_joining_a_system_led_batch_gets_retrieval_and_extraction(
    vector_store, local_embedder, fake_anthropic, settings
):
    settings.AGENT_COALESCE_SECONDS = 0.6
    MemorySettings.objects.update_or_create(pk=1, defaults={"min_score": 0.3})
    fake_anthropic.script(text_message("Voici le point, et je note pour Lyon."))
    results: dict[str, object] = {}

    def send(name: str, text: str, source: str, delay: float) -> None:
        threading.Event().wait(delay)
        try:
            results[name] = handle_message(channel="whatsapp", text=text, source=source)
        except Exception as exc:  # surfaced by the assertions below
            results[name] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=send, args=("system", "Fais le point du matin", "system", 0)),
        threading.Thread(
            target=send, args=("user", "Je déménage à Lyon le mois prochain", "user", 0.2)
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    result = results["system"]
    assert not isinstance(result, Exception), result
    assert results["user"] is result and result.coalesced
    user = Message.objects.get(content="Je déménage à Lyon le mois prochain")
    # Retrieval ran on the user's text (not the system's).
    assert result.retrieval is not None
    assert result.retrieval.message == "Je déménage à Lyon le mois prochain"
    # Extraction is enqueued for the user's message only.
    [job] = Job.objects.filter(kind="extract")
    assert job.payload["message_ids"] == [user.id]
    assert job.payload["reply_id"] == result.reply_id


def test_the_channel_summary_is_inside_the_fenced_block_with_the_memories(world):
    Summary.objects.create(channel="whatsapp", content="Résumé : il prépare un marathon.")
    past_exchange("telegram", "Mon marathon est à Bordeaux en avril", "Super, Bordeaux !")
    world.script(text_message("À Bordeaux."))

    handle_message(channel="whatsapp", text="Il est où mon marathon déjà ?")

    system = world.last.system
    assert system.count("Résumé : il prépare un marathon.") == 1
    fenced = _fenced(system)
    assert "Résumé : il prépare un marathon." in fenced
    assert "Bordeaux" in fenced


def test_the_channel_summary_is_fenced_when_nothing_is_retrieved(world):
    Summary.objects.create(channel="whatsapp", content="Résumé : il prépare un marathon.")
    world.script(text_message("Bonjour, voici le point."))

    result = handle_message(channel="whatsapp", text="Fais le point du matin", source="system")

    assert result.retrieval is None
    system = world.last.system
    assert system.count("Résumé : il prépare un marathon.") == 1
    assert "Résumé : il prépare un marathon." in _fenced(system)


def test_a_room_no_longer_observed_is_not_the_owners_turns_in_the_history(world):
    """QA 8b: what the room said while observed (others' words, still the digest's) is
    neither sent as the owner's turns nor counted as seen, nor read by the extraction."""
    from memory.services.channels import channel_settings_set

    past_exchange("lobby", "Parlons du jardin", "Bien sûr, le jardin.")
    channel_settings_set(channel="lobby", observed=True)
    room = [
        message_save(channel="lobby", role="user", author=author, content=content)
        for author, content in (("david", "Je pars en Grèce demain"), ("eve", "Sophie est promue"))
    ]
    channel_settings_set(channel="lobby", observed=False)  # the owner uses the channel now
    world.script(text_message("C'est noté."))

    result = handle_message(channel="lobby", text="Rappelle-moi d'acheter du pain")

    assert [m["content"] for m in world.last.messages] == [
        "Parlons du jardin",
        "Bien sûr, le jardin.",
        "Rappelle-moi d'acheter du pain",
    ]
    seen = {m.id for m in result.retrieval.history}
    assert not seen & {m.id for m in room}
    [job] = Job.objects.filter(kind="extract")
    assert job.payload["message_ids"] == result.message_ids
