"""An auto-retrieval's block re-read after a forget, before the next LLM request of the answer.

The agent loop calls block_refresh when a tool forgot something mid-answer (agent.context):
what the forget took must reach no later request, the memory block included.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils import timezone

from memory.models import MemorySettings
from memory.services.formatting import clean_text, new_marker
from memory.services.retrieval.block import agent_summary_lines, block_set
from memory.services.retrieval.candidates import hydrate
from memory.services.retrieval.live import live_hydrate
from memory.services.retrieval.result import RetrievalResult


def block_refresh(result: RetrievalResult, *, summary: str) -> None:
    """Drop from ``result`` and its block what is no longer in memory, re-read from T1.

    The core facts, memories and observed-room extracts the block kept are read
    again (candidates.hydrate, live.live_hydrate): one gone, or whose text changed,
    leaves. The agent's self and goals are read again (a deleted one leaves),
    ``summary`` is the channel's summary read again, the notes (the owner's vault,
    which no forget touches) stay. The block is then filled again within
    block_max_tokens, with the same marker. Nothing new is recalled here.
    """
    now = timezone.now()
    found = hydrate([item["id"] for item in [*result.core, *result.memories]], now)

    def alive(item: dict) -> bool:
        candidate = found.get(item["id"])
        return candidate is not None and clean_text(candidate.text) == item["text"]

    live_ids = [int(item["id"].partition(":")[2]) for item in result.live]
    live_texts = {
        item["id"]: item["text"]
        for item in live_hydrate(
            [(mid, 0.0) for mid in live_ids], now=now, tz=ZoneInfo(settings.TIME_ZONE)
        )
    }
    core_lines, memory_lines, note_lines = result.block_lines or ([], [], [])
    core_i = [i for i, item in enumerate(result.core) if alive(item)]
    memories_i = [i for i, item in enumerate(result.memories) if alive(item)]
    live_i = [i for i, item in enumerate(result.live) if live_texts.get(item["id"]) == item["text"]]
    result.core = [result.core[i] for i in core_i]
    result.memories = [result.memories[i] for i in memories_i]
    result.live = [result.live[i] for i in live_i]
    result.summary = summary
    block_set(
        result,
        lines=(
            [core_lines[i] for i in core_i],
            [memory_lines[i] for i in memories_i],
            note_lines,
            [result.live_lines[i] for i in live_i],
            *agent_summary_lines(result),
        ),
        marker=result.marker or new_marker(),
        max_tokens=MemorySettings.load().block_max_tokens,
    )
