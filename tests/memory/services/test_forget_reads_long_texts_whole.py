"""A forget's word rule reads a long text whole, not its first 64 distinct words.

Found while making the notes' passages: the rule (forgetting_select.contains_all) read
a text through the keyword query's word list, which stops at 64 distinct words. A long
reply, fact or note speaking of the topic past its 64th word was left out of the
forget: still injected, still found, after the owner forgot the topic.
"""

from __future__ import annotations

import pytest

from memory.models import Message
from memory.services.facts import fact_store
from memory.services.forgetting import topic_forget, topic_forget_preview
from memory.services.forgetting_select import contains_all
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

# 80 distinct words before the topic.
FILLER = " ".join(f"mot{n}" for n in range(80))


def test_contains_all_reads_past_the_64th_word():
    assert contains_all(f"{FILLER} Lisbonne", ["lisbonne"])
    assert not contains_all(f"{FILLER} Porto", ["lisbonne"])


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    question, _ = exchange_save(
        "whatsapp", "Tu peux me résumer le programme du séminaire ?", f"{FILLER} puis Lisbonne."
    )
    fact, _ = fact_store(key="seminaire", value=f"{FILLER} et enfin Lisbonne.")
    kept, _ = exchange_save("whatsapp", f"{FILLER} puis Porto.", "Noté.")
    index_everything()
    return question, fact, kept


def test_a_forget_takes_a_long_text_naming_the_topic_late(world):
    question, fact, kept = world

    plan = topic_forget_preview(topic="Lisbonne")

    assert f"message:{question.id}" in plan.item_ids()
    assert f"fact:{fact.id}" in plan.item_ids()
    assert f"message:{kept.id}" not in plan.item_ids()
    topic_forget(topic="Lisbonne", only=plan.item_ids())
    assert not Message.objects.filter(pk=question.id).exists()
    assert Message.objects.filter(pk=kept.id).exists()
