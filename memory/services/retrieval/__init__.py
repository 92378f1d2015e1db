"""Auto-retrieval, the pre-hook run before every LLM call (DESIGN.md "Retrieval", path 1).

auto_retrieve(message, channel) gathers four sources, each with its own time
limit, their waits overlapping: the query embedding and the Qdrant searches
(and the Obsidian notes) run in worker threads while this thread reads T1 and
FTS5 in SQLite. The ranked lists are fused by reciprocal rank fusion, then
hydrated from T1 (the source of truth: a forgotten fact or a deleted message
never comes back through a stale point), stripped of what the channel already
has (its recent history, what was injected in the last turns, near-duplicates
of those) and capped. The result carries the fenced prompt block and is
logged in memory_retrievals. Nothing here raises: a failing source is skipped
and recorded.

Modules: ``pipeline`` (auto_retrieve and the preview), ``sources`` (semantic,
keywords, T1, time, notes), ``ranking`` (fusion, memory_rank), ``candidates``
(T1 hydration, what the LLM already sees), ``selection`` (dedup, carried
memories), ``block`` (French lines within the token budget), ``log``, ``warm``
(the warm-up at `serve`'s start).
"""

from memory.services.retrieval.pipeline import auto_retrieve, auto_retrieve_preview
from memory.services.retrieval.ranking import memory_rank
from memory.services.retrieval.result import RetrievalResult
from memory.services.retrieval.warm import retrieval_warm

__all__ = [
    "RetrievalResult",
    "auto_retrieve",
    "auto_retrieve_preview",
    "memory_rank",
    "retrieval_warm",
]
