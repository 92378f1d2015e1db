"""A short message ("and my knee?") says little for its embedding to stand clear of the
query's background: the relevance gate lets it through only when two sources agree."""

from __future__ import annotations

import pytest

from memory.services.retrieval import auto_retrieve_preview
from tests.memory.world import OWNER_FACTS, facts_remember_indexed

pytestmark = pytest.mark.django_db

WITH_THE_KNEE = [
    *OWNER_FACTS,
    ("knee", "Mickael hurt his left knee while running in April.", "event"),
]


@pytest.mark.xfail(
    strict=True,
    reason="Known limit of the gate: its best semantic hit stands 0.061 above the background "
    "(the margin is 0.075) and only the keyword source finds the knee. Letting a keyword hit "
    "holding every word of a short message through found it, and raised heldout2's hybrid "
    "scores, but made one more of its negatives inject ('d'accord je regarde': 18 -> 17 of "
    "22 silent, 170 -> 214 tokens on average): not taken.",
)
def test_and_my_knee_injects_the_memory_holding_the_word_knee(vector_store, local_embedder):
    stored = facts_remember_indexed(WITH_THE_KNEE)
    result = auto_retrieve_preview(message="and my knee?", channel="gateway")
    assert f"fact:{stored['knee'].id}" in [m["id"] for m in result.memories], result.gate


def test_a_short_question_about_what_no_memory_mentions_injects_nothing(
    vector_store, local_embedder
):
    facts_remember_indexed(WITH_THE_KNEE)
    result = auto_retrieve_preview(message="and my elbow?", channel="gateway")
    assert (result.gate, result.memories) == ("off_topic", [])
