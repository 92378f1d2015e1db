"""A short message ("and my knee?") says little for its embedding to stand clear of the
query's background: the relevance gate lets it through only when two sources agree."""

from __future__ import annotations

import pytest

from memory.models import Fact
from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_row
from memory.services.retrieval import auto_retrieve_preview, retrieval_warm

pytestmark = pytest.mark.django_db

OWNER_FACTS = [
    ("user_name", "Mickael", "identity"),
    ("velo", "Le vélo de route est au garage pour un pneu crevé.", "fact"),
    ("chat", "Le chat de Mickael s'appelle Pixel.", "fact"),
    ("kine", "Le kiné s'appelle Hélène, cabinet rue Victor Hugo.", "fact"),
    ("wifi", "Le mot de passe du wifi est licorne42.", "fact"),
    ("lisbonne", "Voyage à Lisbonne en juin avec Sophie.", "event"),
    ("knee", "Mickael hurt his left knee while running in April.", "event"),
]


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


@pytest.mark.xfail(
    strict=True,
    reason="Known limit of the gate: its best semantic hit stands 0.061 above the background "
    "(the margin is 0.075) and only the keyword source finds the knee. Letting a keyword hit "
    "holding every word of a short message through found it, and raised heldout2's hybrid "
    "scores, but made one more of its negatives inject ('d'accord je regarde': 18 -> 17 of "
    "22 silent, 170 -> 214 tokens on average): not taken.",
)
def test_and_my_knee_injects_the_memory_holding_the_word_knee(
    vector_store, local_embedder, slow_machine_ok
):
    stored = _remember(OWNER_FACTS)
    result = auto_retrieve_preview(message="and my knee?", channel="gateway")
    assert f"fact:{stored['knee'].id}" in [m["id"] for m in result.memories], result.gate


def test_a_short_question_about_what_no_memory_mentions_injects_nothing(
    vector_store, local_embedder, slow_machine_ok
):
    _remember(OWNER_FACTS)
    result = auto_retrieve_preview(message="and my elbow?", channel="gateway")
    assert (result.gate, result.memories) == ("off_topic", [])
