"""The fenced block of an auto-retrieval: memories as French lines, notes and the channel's
summary, within the token budget."""

from __future__ import annotations

from datetime import datetime

from memory.models import Fact, MemorySettings, MemoryType
from memory.services.formatting import (
    BlockLine,
    block_within_budget,
    clean_text,
    estimate_tokens,
    new_marker,
    relative_time_fr,
)
from memory.services.notes_relevance import message_words, note_injected_text
from memory.services.retrieval.candidates import Seen, fact_line
from memory.services.retrieval.result import Candidate, RetrievalResult, failure_text
from memory.services.retrieval.selection import carried_memories
from memory.services.retrieval.sources import SOURCE_SEMANTIC

KIND_LABELS = {"exchange": "conversation", "fact": "fait", "summary": "résumé"}


def block_fill(
    result: RetrievalResult,
    *,
    history: list,
    core: list[Fact],
    kept: list,
    recent_ids: set[str],
    seen: Seen,
    notes,
    hydrated: dict[str, Candidate] | None = None,
    live: list[dict] = (),
    text: str,
    memory_settings: MemorySettings,
    now: datetime,
    tz,
    agent_lines: tuple[list[BlockLine], list[BlockLine]] = ([], []),
) -> None:
    """Fill ``result`` with the memories, the carried ones and the notes, and the block.

    ``agent_lines``: the agent's self and goals (agent_summary_lines), read with T1
    while the embedding runs: nothing here reads the database.
    """
    result.history = history
    result.core = [fact_dict(f, now, tz) for f in core]
    result.memories = [memory_dict(c, entry, now, tz) for c, entry in kept]
    try:
        # A core fact is in the block already: carried, it would be there twice.
        core_ids = {f"fact:{fact.pk}" for fact in core}
        carried = carried_memories(recent_ids - core_ids, kept, seen, now, hydrated)
    except Exception as exc:  # never raise from the pre-hook
        result.failed_sources["carried"] = failure_text(exc, "carried")
        carried = []
    result.memories += [memory_dict(c, None, now, tz) for c in carried]
    asked = message_words(text, tag=memory_settings.obsidian_context_tag) if notes else frozenset()
    result.notes = [
        {"path": n.path, "source": n.source, "text": note_injected_text(n, asked)}
        for n in (notes.notes if notes is not None else [])
    ]
    # Tagged notes most related to the message first (fixed notes keep their place).
    from memory.services.relevance import content_words

    words = set(content_words(text))
    fixed = [n for n in result.notes if n["source"] == "fixed"]
    tagged = [n for n in result.notes if n["source"] != "fixed"]
    tagged.sort(key=lambda n: -len(words & set(content_words(n["text"]))))
    result.notes = fixed + tagged
    core_lines = [
        BlockLine(block_label("fait", f["type"], f["channel"], f["relative_time"]), f["text"])
        for f in result.core
    ]
    memory_lines = [
        BlockLine(
            block_label(KIND_LABELS[m["kind"]], m["type"], m["channel"], m["relative_time"]),
            m["text"],
        )
        for m in result.memories
    ]
    note_lines = [BlockLine(f"note · {n['path']}", n["text"]) for n in result.notes]
    live_lines = [BlockLine(item["label"], item["text"]) for item in live]
    result.live = list(live)
    block_set(
        result,
        lines=(core_lines, memory_lines, note_lines, live_lines, *agent_lines),
        marker=new_marker(),
        max_tokens=memory_settings.block_max_tokens,
    )


def block_set(result: RetrievalResult, *, lines: tuple, marker: str, max_tokens: int) -> None:
    """Fit the block's lines and the channel's summary within ``max_tokens``, and keep in
    ``result`` what the block holds. ``lines``: core, memories, notes, live, self, goals,
    the first four aligned with result.core, .memories, .notes and .live."""
    core_lines, memory_lines, note_lines, live_lines, self_lines, goal_lines = lines
    block, kept = block_within_budget(
        core=core_lines,
        memories=memory_lines,
        notes=note_lines,
        live=live_lines,
        selves=self_lines,
        goals=goal_lines,
        summary=result.summary,
        marker=marker,
        max_tokens=max_tokens,
    )
    result.prompt_block = block
    result.marker = marker
    result.block_lines = (
        [core_lines[i] for i in kept["core"]],
        [memory_lines[i] for i in kept["memories"]],
        [note_lines[i] for i in kept["notes"]],
    )
    result.self_lines = (
        [self_lines[i] for i in kept["selves"]],
        [goal_lines[i] for i in kept["goals"]],
    )
    result.core = [result.core[i] for i in kept["core"]]
    result.memories = [result.memories[i] for i in kept["memories"]]
    result.notes = [result.notes[i] for i in kept["notes"]]
    result.live = [result.live[i] for i in kept["live"]]
    result.live_lines = [live_lines[i] for i in kept["live"]]
    result.tokens_added = estimate_tokens(block)


def agent_summary_lines(result: RetrievalResult | None = None, *, facts=None):
    """The agent's self and goals as block lines ("capacité", "objectif · comprendre").

    Read on every message, whatever the relevance gate says: the prompt itself no
    longer says who the agent is. ``facts``: the FactsView this message already
    read (else it is read here). Never raises (a failure is recorded in ``result``).
    """
    from memory.services.retrieval.facts_view import facts_view

    try:
        view = facts or facts_view()
    except Exception as exc:  # never raise from the pre-hook
        if result is not None:
            result.failed_sources["self"] = failure_text(exc, "self")
        return [], []
    return list(view.selves), list(view.goals)


def self_block_fill(result: RetrievalResult, *, memory_settings: MemorySettings) -> None:
    """The block of a message that recalls no memory (small talk): the self and goals,
    and the channel's summary (conversation context, like the history)."""
    self_lines, goal_lines = agent_summary_lines(result)
    if not (self_lines or goal_lines or result.summary):
        return
    marker = new_marker()
    block, kept = block_within_budget(
        core=[],
        memories=[],
        notes=[],
        selves=self_lines,
        goals=goal_lines,
        summary=result.summary,
        marker=marker,
        max_tokens=memory_settings.block_max_tokens,
    )
    result.prompt_block = block
    result.marker = marker
    result.block_lines = ([], [], [])
    result.self_lines = (
        [self_lines[i] for i in kept["selves"]],
        [goal_lines[i] for i in kept["goals"]],
    )
    result.tokens_added = estimate_tokens(block)


# Each memory type's label as a block line names it (MemoryType.labels is rebuilt on every read).
_TYPE_LABELS = {value: label.lower() for value, label in MemoryType.choices}


def block_label(kind: str, memory_type: str, channel: str, relative: str) -> str:
    parts = [_TYPE_LABELS.get(memory_type, kind)]
    if channel:
        parts.append(channel)
    parts.append(relative)
    return " · ".join(parts)


def fact_dict(fact: Fact, now: datetime, tz) -> dict:
    return {
        "id": f"fact:{fact.pk}",
        "kind": "fact",
        "key": fact.key,
        "text": clean_text(fact_line(fact.key, fact.value)),
        "type": fact.memory_type,
        "channel": fact.channel,
        "timestamp": fact.date.isoformat(),
        "relative_time": relative_time_fr(fact.date, now=now, tz=tz),
        # Always injected (identity and core facts): found by no ranked source.
        "sources": {},
        "score": None,
    }


def memory_dict(candidate: Candidate, entry, now: datetime, tz) -> dict:
    """A memory of the block; ``entry`` None: carried from the last turns (see carried_memories)."""
    memory = {
        "id": candidate.id,
        "kind": candidate.kind,
        "text": clean_text(candidate.text),
        "type": candidate.memory_type,
        "channel": candidate.channel,
        "timestamp": candidate.timestamp.isoformat(),
        "relative_time": relative_time_fr(candidate.timestamp, now=now, tz=tz),
    }
    if entry is None:
        return {**memory, "sources": {}, "rrf": 0.0, "score": None, "carried": True}
    scores = [s["score"] for name, s in entry.sources.items() if name == SOURCE_SEMANTIC]
    return {
        **memory,
        "sources": entry.sources,
        "rrf": round(entry.rrf, 6),
        "score": scores[0] if scores else None,
    }
