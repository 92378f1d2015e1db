"""Small talk recalls nothing from memory; the channel's summary still goes with it.

The summary stands for the channel's older history (compacted), which the LLM gets
with every message like the recent history itself: it is conversation context, not a
memory recall. It sits in the block within block_max_tokens, and the block holds no
recalled memory (facts, memories, notes, observed rooms).
"""

from __future__ import annotations

import re

import pytest

from agent.loop import handle_message
from agent.models import LlmUsage
from memory.models import MemorySettings, Summary
from memory.services.facts import fact_store
from memory.services.formatting import SECTION_TITLES, SUMMARY_TITLE, estimate_tokens
from tests.fakes.anthropic import text_message
from tests.memory.world import index_everything

pytestmark = pytest.mark.django_db

RECALLS = [SECTION_TITLES[name] for name in ("core", "memories", "live", "notes")]


def _block(system: str) -> str:
    found = re.search(r"<<<MEMOIRE (\S+)>>>.*<<<FIN MEMOIRE \1>>>", system, re.S)
    assert found, system
    return found.group(0)


@pytest.mark.parametrize("small_talk", ["ok", "merci"])
def test_small_talk_carries_the_summary_and_recalls_nothing_within_the_budget(world, small_talk):
    MemorySettings.objects.update_or_create(pk=1, defaults={"block_max_tokens": 200})
    fact_store(key="velo", value="Le vélo de route est au garage pour le dérailleur")
    index_everything()
    Summary.objects.create(
        channel="whatsapp",
        content="Résumé : le vélo est au garage. " + "Sortie du club le dimanche. " * 80,
        message_count=40,
    )
    world.script(text_message("👍"))

    result = handle_message(channel="whatsapp", text=small_talk)

    assert result.retrieval.gate == "small_talk"
    assert not (result.retrieval.memories or result.retrieval.core or result.retrieval.notes)
    block = _block(world.last.system)
    assert f"## {SUMMARY_TITLE}" in block
    assert "Résumé : le vélo est au garage." in block
    assert not [title for title in RECALLS if title in block]
    assert "dérailleur" not in block
    assert estimate_tokens(block) <= 200
    assert LlmUsage.objects.get(purpose="chat").retrieval_tokens == estimate_tokens(block)
