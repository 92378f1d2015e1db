"""Small talk is the politeness, not the words it is made of: "demain", "tomorrow",
"soirée", "journée" and "note" name a topic in a question, and are small talk only in
the phrases that take leave or acknowledge ("à demain", "see you tomorrow", "bonne
soirée", "c'est noté")."""

from __future__ import annotations

import pytest

from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_row
from memory.services.relevance import is_small_talk
from memory.services.retrieval import auto_retrieve_preview, retrieval_warm

OWNER_FACTS = [
    ("user_name", "Mickael", "identity"),
    ("velo", "Le vélo de route est au garage pour un pneu crevé.", "fact"),
    ("chat", "Le chat de Mickael s'appelle Pixel.", "fact"),
    ("kine", "Le kiné s'appelle Hélène, cabinet rue Victor Hugo.", "fact"),
    ("wifi", "Le mot de passe du wifi est licorne42.", "fact"),
    ("lisbonne", "Voyage à Lisbonne en juin avec Sophie.", "event"),
]


@pytest.mark.parametrize(
    "message",
    [
        "Qu'est-ce que j'ai demain ?",
        "j'ai quoi demain",
        "what do I have tomorrow?",
        "c'est quand la soirée ?",
        "comment s'est passée ma journée de mardi ?",
        "et la note ?",
        "what about this morning?",
        "on se voit demain soir ?",
    ],
)
def test_a_question_about_a_day_a_party_or_a_note_is_not_small_talk(message):
    assert not is_small_talk(message)


@pytest.mark.parametrize(
    "message",
    [
        "à demain !",
        "A demain",
        "see you tomorrow",
        "Bonne soirée !",
        "merci, bonne journée à toi",
        "Bonne nuit",
        "bonne nuit bonne nuit",
        "bonne après-midi !",
        "good night!",
        "good morning",
        "have a good day",
        "c'est noté",
        "noté !",
        "ok, noté 👍",
        "good!",
        "very good",
    ],
)
def test_taking_leave_and_acknowledging_are_still_small_talk(message):
    assert is_small_talk(message)


def _remember(facts) -> dict[str, Fact]:
    stored = {}
    for key, value, memory_type in facts:
        fact = fact_store(key=key, value=value, memory_type=memory_type)[0]
        index_row(KIND_FACT, fact.id)
        stored[key] = fact
    retrieval_warm()
    return stored


@pytest.fixture
def slow_machine_ok(settings):
    # A cold model on a shared machine must not look like a gate decision.
    settings.RETRIEVAL_TIMEOUTS_MS = dict.fromkeys(settings.RETRIEVAL_TIMEOUTS_MS, 60000)


def _injected(message: str) -> list[str]:
    result = auto_retrieve_preview(message=message, channel="gateway")
    assert result.gate != "small_talk"
    return [m["id"] for m in result.memories]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("question", "memory"),
    [
        ("Qu'est-ce que j'ai demain ?", "Demain : rendez-vous chez le dentiste à 9 heures."),
        ("j'ai quoi demain", "Demain : rendez-vous chez le dentiste à 9 heures."),
        ("what do I have tomorrow?", "Tomorrow: dentist appointment at 9 am."),
    ],
)
def test_a_question_about_tomorrow_injects_what_is_planned_for_it(
    vector_store, local_embedder, slow_machine_ok, question, memory
):
    """(An English question about a French memory is the gate's to judge: its best hit
    stands as close to the background as an off-topic question's and no word is shared.)"""
    stored = _remember([*OWNER_FACTS, ("dentiste", memory, "todo")])
    assert f"fact:{stored['dentiste'].id}" in _injected(question)


@pytest.mark.django_db
def test_a_question_about_the_party_injects_the_party(
    vector_store, local_embedder, slow_machine_ok
):
    stored = _remember(
        [*OWNER_FACTS, ("soiree", "La soirée d'anniversaire de Julie est samedi à 20 h.", "event")]
    )
    assert f"fact:{stored['soiree'].id}" in _injected("c'est quand la soirée ?")
