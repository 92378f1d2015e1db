"""QA: a short acknowledgement (« thanks for your help », « impeccable », « compris »,
« bien reçu ») injects unrelated memories into the prompt.

README: small talk (« ok », « merci », « 👍 », politeness) recalls nothing at all, and a
message the memory holds nothing about injects no memory (the relevance gate). These
acknowledgements name no topic, yet the gate lets them through and the system prompt
the LLM receives carries the wifi password, the cat's name, a gift idea... The ASCII
emoticons « <3 » and « +1 » were read as the numbers 3 and 1: any memory holding one
passed the gate (« 👍 » and « ❤️ » were stopped, their ASCII forms were not).
"""

from __future__ import annotations

import re

import pytest

from agent.loop import handle_message
from memory.services.formatting import SECTION_TITLES
from tests.fakes.anthropic import text_message
from tests.memory.world import OWNER_FACTS, facts_remember_indexed

pytestmark = pytest.mark.django_db

EXTRA_FACTS = [
    ("colis", "J'ai reçu le colis de la Redoute mardi.", "fact"),
    ("hotel", "Le petit-déjeuner est compris dans le prix de l'hôtel à Rome.", "fact"),
    ("cadeau", "Idée de cadeau pour Sophie : un livre de recettes, elle trouve ça génial.", "fact"),
    ("note", "Je note mes dépenses dans un carnet rouge.", "fact"),
    ("grave", "Pas de maladie grave dans la famille, juste de l'asthme.", "fact"),
]
# Memories no acknowledgement is about, by any word or meaning.
UNRELATED = ("licorne42", "Pixel", "livre de recettes", "asthme", "Lisbonne", "Hélène")


NUMBERED = [
    ("enfants", "Sophie a 3 enfants et 1 chien.", "fact"),
    ("rdv", "Rendez-vous chez le dentiste le 1er mars à 3 h.", "todo"),
]


def _block(system: str) -> str:
    found = re.search(r"<<<MEMOIRE (\S+)>>>.*<<<FIN MEMOIRE \1>>>", system, re.S)
    return found.group(0) if found else ""


@pytest.mark.parametrize(
    "acknowledgement",
    [
        "thanks for your help",
        "thanks for the help",
        "impeccable",
        "compris",
        "bien reçu",
    ],
)
def test_an_acknowledgement_injects_no_unrelated_memory(world, acknowledgement):
    facts_remember_indexed([*OWNER_FACTS, *EXTRA_FACTS])
    world.script(text_message("Avec plaisir !"))

    result = handle_message(channel="mission_control", text=acknowledgement)

    block = _block(world.last.system)
    leaked = [word for word in UNRELATED if word in block]
    assert not leaked, (
        f"« {acknowledgement} » (gate={result.retrieval.gate!r}) put unrelated memories "
        f"in the prompt: {leaked}; recalled: {[m['id'] for m in result.retrieval.memories]}"
    )
    assert SECTION_TITLES["memories"] not in block


@pytest.mark.parametrize("emoticon", ["<3", "+1"])
def test_an_ascii_emoticon_recalls_nothing(world, emoticon):
    facts_remember_indexed([*OWNER_FACTS, *NUMBERED])
    world.script(text_message("😊"))

    result = handle_message(channel="mission_control", text=emoticon)

    block = _block(world.last.system)
    assert SECTION_TITLES["memories"] not in block, (
        f"« {emoticon} » (gate={result.retrieval.gate!r}) recalled "
        f"{[m['id'] for m in result.retrieval.memories]}:\n{block}"
    )
    assert "dentiste" not in block and "licorne42" not in block
