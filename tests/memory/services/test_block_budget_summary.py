"""The channel's summary is part of the memory block: it keeps to block_max_tokens with the
rest, and the token counts logged for the block (tokens_added, retrieval_tokens) count it."""

from __future__ import annotations

import re

import pytest

from agent.loop import handle_message
from agent.models import LlmUsage
from memory.models import MemoryRetrieval, MemorySettings, Summary
from memory.services.facts import fact_store
from memory.services.formatting import (
    SUMMARY_TITLE,
    BlockLine,
    block_within_budget,
    estimate_tokens,
    prompt_block,
)
from memory.services.retrieval.log import retrieval_logs_wait
from tests.fakes.anthropic import text_message
from tests.memory.world import exchange_save, index_everything

PARAGRAPH = (
    "Le propriétaire a parlé de son vélo de route, de la chaîne changée, du dérailleur "
    "réglé, des pneus d'hiver et de la sortie du club le dimanche matin. "
)
LONG_SUMMARY = "Résumé du canal whatsapp (40 messages) :\n" + PARAGRAPH * 25
ITEMS = {
    "selves": [BlockLine("capacité", "Je réponds en français sur plusieurs canaux.")],
    "core": [BlockLine("fait · identité", "Il s'appelle Paul et habite à Pau.")],
    "memories": [
        BlockLine(f"conversation · whatsapp · hier {i}", "mot " * (10 + 7 * i)) for i in range(6)
    ],
    "notes": [BlockLine("note · velo.md", "Entretien du vélo : chaîne, patins, pneus.")],
}


def _summary_of(block: str) -> str:
    lines = block.splitlines()
    if f"## {SUMMARY_TITLE}" not in lines:
        return ""
    return lines[lines.index(f"## {SUMMARY_TITLE}") + 1]


def test_the_summary_keeps_to_the_budget_at_every_budget():
    whole = estimate_tokens(prompt_block(**ITEMS, summary=LONG_SUMMARY, marker="AB12"))
    for max_tokens in range(0, whole + 5, 3):
        block, _ = block_within_budget(
            **ITEMS, summary=LONG_SUMMARY, marker="AB12", max_tokens=max_tokens
        )
        assert estimate_tokens(block) <= max_tokens, max_tokens


def test_the_summary_is_sure_of_a_share_and_takes_what_the_memories_leave():
    # Room for everything but the whole summary: it gets what the items leave.
    block, kept = block_within_budget(**ITEMS, summary=LONG_SUMMARY, marker="AB12", max_tokens=800)
    assert 785 <= estimate_tokens(block) <= 800  # grown into the room left (to a word)
    assert all(len(kept[name]) == len(ITEMS.get(name, [])) for name in kept)
    assert _summary_of(block).endswith("…")

    # Many long memories: the summary keeps its share, the memories the rest.
    many = [BlockLine(f"conversation {i}", "mot " * 60) for i in range(20)]
    block, kept = block_within_budget(
        memories=many, core=[], notes=[], summary=LONG_SUMMARY, marker="AB12", max_tokens=600
    )
    summary_tokens = estimate_tokens(_summary_of(block))
    assert estimate_tokens(block) <= 600
    assert 0 < len(kept["memories"]) < len(many)
    assert summary_tokens >= (600 - 100) // 2 - 10, summary_tokens

    # A short summary is whole, and without one the block is what it always was.
    block, _ = block_within_budget(**ITEMS, summary="Court résumé.", marker="AB12", max_tokens=800)
    assert _summary_of(block) == "Court résumé."
    assert block_within_budget(**ITEMS, marker="AB12", max_tokens=300) == block_within_budget(
        **ITEMS, summary="", marker="AB12", max_tokens=300
    )


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings, tmp_path):
    settings.AGENT_COALESCE_SECONDS = 0
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return fake_anthropic


def _block(system: str) -> str:
    found = re.search(r"<<<MEMOIRE (\S+)>>>.*<<<FIN MEMOIRE \1>>>", system, re.S)
    assert found, system
    return found.group(0)


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [200, 400])
def test_the_agents_block_with_the_summary_keeps_to_block_max_tokens(world, budget):
    MemorySettings.objects.update_or_create(pk=1, defaults={"block_max_tokens": budget})
    exchange_save("whatsapp", "Le vélo est au garage", "D'accord.")
    Summary.objects.create(channel="whatsapp", content=LONG_SUMMARY, message_count=40)
    fact_store(key="velo", value="Le vélo de route est au garage pour le dérailleur")
    index_everything()
    world.script(text_message("Oui."))

    result = handle_message(channel="whatsapp", text="Où en est mon vélo ?")

    block = _block(world.last.system)
    assert estimate_tokens(block) <= budget
    assert f"## {SUMMARY_TITLE}" in block
    # Every count of the block counts the summary in it.
    assert result.retrieval.tokens_added == estimate_tokens(block)
    assert LlmUsage.objects.get(purpose="chat").retrieval_tokens == estimate_tokens(block)
    retrieval_logs_wait()
    assert MemoryRetrieval.objects.get(pk=result.retrieval_id).tokens_added == estimate_tokens(
        block
    )


@pytest.mark.django_db
def test_without_auto_retrieval_the_summary_still_keeps_to_the_budget(world):
    MemorySettings.objects.update_or_create(
        pk=1, defaults={"block_max_tokens": 200, "auto_retrieve_enabled": False}
    )
    Summary.objects.create(channel="whatsapp", content=LONG_SUMMARY, message_count=40)
    world.script(text_message("Oui."))

    handle_message(channel="whatsapp", text="Où en est mon vélo ?")

    block = _block(world.last.system)
    assert estimate_tokens(block) <= 200
    assert f"## {SUMMARY_TITLE}" in block
    assert LlmUsage.objects.get(purpose="chat").retrieval_tokens == estimate_tokens(block)
