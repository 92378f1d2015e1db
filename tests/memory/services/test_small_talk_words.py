"""Small talk is the politeness, not the words it is made of: "demain", "tomorrow",
"soirée", "journée" and "note" name a topic in a question, and are small talk only in
the phrases that take leave or acknowledge ("à demain", "see you tomorrow", "bonne
soirée", "c'est noté")."""

from __future__ import annotations

import pytest

from memory.services.relevance import is_small_talk
from memory.services.retrieval import auto_retrieve_preview
from tests.memory.world import OWNER_FACTS, facts_remember_indexed


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
        "qu'est-ce qui est compris ?",  # an acknowledgement's word in a question
        "le petit-déjeuner est compris ?",
        "reçu le colis ?",
        "appelle le +1 555 0100",  # an emoticon's shape in a number
        "<3 Sophie",
        "page 8)",
        "j'ai quoi le 5/5 ?",  # review: « reçu 5/5 » is small talk, the date is not
        "On fait quoi le 5/5 ?",
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
        "bien reçu",
        "compris !",
        "impeccable",
        "je note",
        "thanks for your help",
        "merci pour ton aide :)",
        "<3",
        "+1",
    ],
)
def test_taking_leave_and_acknowledging_are_still_small_talk(message):
    assert is_small_talk(message)


@pytest.mark.parametrize(
    "message",
    [
        # Chat shorthand and thanks the evaluation sets' negatives showed injecting memories.
        "merci bcp !",
        "parfait merci bcp",
        "cheers",
        "haha nice one",
        "thanks, that's perfect",
        "d'acc",
        "d'accord je regarde",
        "awesome thanks",
        "perfect",
        "Merci infiniment",
        "merci mille fois",
        "c'est gentil",
        "bisous",
        "bises !",
        "excellent",
        "love it",
        "kk",
        "tks",
        "oki doki",
        "sure",
        "alright",
        "amazing!",
        "bonne idée",
        "good idea",
        "je regarde ça",
        "je vais voir",
    ],
)
def test_chat_shorthand_thanks_and_acknowledgements_are_small_talk(message):
    assert is_small_talk(message)


@pytest.mark.parametrize(
    "message",
    [
        "On part à Nice en juin ?",  # the city, not « nice one »
        "c'est quoi l'idée de Paul pour les vacances ?",
        "je regarde quoi ce soir ?",
        "je vais voir qui samedi ?",
        "are you sure the dentist is on Monday?",
        "mille euros pour le devis ?",
        "c'est quoi le mate que Léa aime ?",
    ],
)
def test_the_same_words_in_a_question_name_a_topic(message):
    assert not is_small_talk(message)


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
    vector_store, local_embedder, question, memory
):
    """(An English question about a French memory is the gate's to judge: its best hit
    stands as close to the background as an off-topic question's and no word is shared.)"""
    stored = facts_remember_indexed([*OWNER_FACTS, ("dentiste", memory, "todo")])
    assert f"fact:{stored['dentiste'].id}" in _injected(question)


@pytest.mark.django_db
def test_a_question_about_the_party_injects_the_party(vector_store, local_embedder):
    stored = facts_remember_indexed(
        [*OWNER_FACTS, ("soiree", "La soirée d'anniversaire de Julie est samedi à 20 h.", "event")]
    )
    assert f"fact:{stored['soiree'].id}" in _injected("c'est quand la soirée ?")
