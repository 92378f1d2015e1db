"""Which fused memories to inject: not what the LLM sees, not near-duplicates, the last turns carried."""

from __future__ import annotations

from datetime import datetime

from memory.services.retrieval.candidates import Seen, hydrate
from memory.services.retrieval.ranking import NEWER_FIRST_HEAD, newer_first, point_vectors
from memory.services.retrieval.result import Candidate, failure_text

# How many candidates each source proposes, per memory finally kept.
CANDIDATES_PER_RESULT = 4
CANDIDATES_MIN = 12


def select_memories(
    *,
    fused,
    candidates,
    recent_ids,
    seen,
    core,
    memory_settings,
    embedder,
    result,
):
    """The fused entries to inject, hydrated, in order, at most max_results.

    Only the head of the fused list is hydrated and checked (a few times
    max_results): the tail could never be injected anyway.
    """
    wanted = memory_settings.max_results
    head = fused[: max(CANDIDATES_MIN, wanted * CANDIDATES_PER_RESULT)]
    core_ids = {f"fact:{f.pk}" for f in core}

    selected: list[tuple[Candidate, object]] = []
    taken: set[str] = set()
    for entry in head:
        candidate = candidates.get(str(entry.id))
        if candidate is None or candidate.id in taken or candidate.id in core_ids:
            continue
        taken.add(candidate.id)
        if seen.covers(candidate):
            continue  # already in the conversation the LLM receives
        if candidate.id in recent_ids:
            continue
        selected.append((candidate, entry))
        if len(selected) >= wanted * 2:
            break
    if embedder is None or not selected or not (recent_ids or len(selected) > 1):
        return selected[:wanted]

    try:
        vectors = point_vectors([c.id for c, _ in selected] + sorted(recent_ids))
    except Exception as exc:
        result.failed_sources["near_duplicates"] = failure_text(exc, "near_duplicates")
        return selected[:wanted]
    import numpy as np

    # A newer version of a topic before the older one.
    by_id = {c.id: (c, entry) for c, entry in selected}
    head = newer_first(
        [c.id for c, _ in selected[:NEWER_FIRST_HEAD]],
        vectors=vectors,
        timestamps={c.id: c.timestamp for c, _ in selected},
        threshold=embedder.same_topic_threshold,
    )
    selected = [by_id[i] for i in head] + selected[NEWER_FIRST_HEAD:]

    # Near-duplicates of what was injected in the last turns, or of each other.
    threshold = embedder.near_duplicate_threshold
    order = [i for i in dict.fromkeys([*(c.id for c, _ in selected), *recent_ids]) if i in vectors]
    row = {item_id: k for k, item_id in enumerate(order)}
    if order:
        # Every pair at once (one conversion of the vectors, not one per candidate);
        # stored vectors are L2-normalised: the dot product is the cosine.
        matrix = np.asarray([vectors[i] for i in order], dtype=np.float64)
        cosines = matrix @ matrix.T
    kept = [row[i] for i in recent_ids if i in row]
    deduped = []
    for candidate, entry in selected:
        k = row.get(candidate.id)
        if k is not None and kept and float(cosines[k, kept].max()) >= threshold:
            continue
        deduped.append((candidate, entry))
        if k is not None:
            kept.append(k)
        if len(deduped) >= wanted:
            break
    return deduped


def recently_injected(channel: str, turns: int) -> set[str]:
    """Ids newly injected into this channel's prompt in its last ``turns`` retrievals.

    Derived from the retrieval log, so a compaction (which rewrites messages,
    not logs) does not reset it. Carried items (below) do not count: each
    memory is carried for ``turns`` turns after it was found, then dropped.
    """
    from memory.services.retrieval.log import channel_turns

    return {
        item["id"]
        for memories in channel_turns(channel, turns)
        for item in memories
        # Extracts of observed rooms are searched again every turn, never carried.
        if "id" in item and not item.get("carried") and item.get("kind") != "live"
    }


def carried_memories(
    recent_ids: set[str],
    kept: list,
    seen: Seen,
    now: datetime,
    hydrated: dict[str, Candidate] | None = None,
) -> list[Candidate]:
    """The memories injected in the last turns, carried into this prompt.

    The system prompt is rebuilt on every call: a memory injected on turn 1
    lives nowhere on turn 2 unless it is injected again. So what the last
    turns found stays in the block (after this turn's own finds, within the
    token budget), and the near-duplicate check against them is sound: the
    LLM does see them. Re-read from T1: a memory forgotten since is not carried
    (``hydrated``: what this run already re-read, see ranking.prefetch).
    """
    new = {candidate.id for candidate, _ in kept}
    wanted = sorted(recent_ids - new)
    if not wanted:
        return []
    hydrated = hydrated or {}
    missing = [i for i in wanted if i not in hydrated]
    if missing:
        hydrated = {**hydrated, **hydrate(missing, now)}
    return [c for c in (hydrated.get(i) for i in wanted) if c is not None and not seen.covers(c)]
