"""What an auto-retrieval returns, the candidates it weighs, and small helpers."""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime

from memory.exceptions import MemoryServiceError
from memory.models import Message
from memory.services.formatting import BlockLine

logger = logging.getLogger(__name__)

# Longest failure text a source keeps (failed_sources: the log row, the page, the API).
FAILURE_TEXT_MAX = 300


@dataclass
class RetrievalResult:
    channel: str
    message: str
    memories: list[dict] = field(default_factory=list)
    core: list[dict] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    prompt_block: str = ""
    # The channel's summary the agent loop's prompt carries (auto_retrieve's
    # ``summary``): conversation context, in the block within the same budget.
    summary: str = ""
    # The block's marker and kept lines (core, memories, notes): the agent loop
    # rebuilds the block from them after a forget (retrieval.refresh).
    marker: str = ""
    block_lines: tuple[list[BlockLine], list[BlockLine], list[BlockLine]] | None = None
    # Extracts of observed rooms (the `live` collection) and their block lines.
    live: list[dict] = field(default_factory=list)
    live_lines: list[BlockLine] = field(default_factory=list)
    # The agent's self and goals kept in the block (memory.services.self_memory).
    self_lines: tuple[list[BlockLine], list[BlockLine]] = ([], [])
    tokens_added: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    total_ms: float = 0.0
    failed_sources: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    # Why nothing was injected, when the relevance gate said so: "small_talk" | "off_topic".
    gate: str = ""
    # The memory_retrievals row being written by the log's writer thread (log.py).
    log_future: Future | None = field(default=None, repr=False, compare=False)
    _retrieval_id: int | None = field(default=None, repr=False)

    @property
    def retrieval_id(self) -> int | None:
        """The id of this retrieval's log row (None: not logged); waits for a pending write."""
        if self._retrieval_id is None and self.log_future is not None:
            from memory.services.retrieval.log import LOG_WAIT_SECONDS

            try:
                self._retrieval_id = self.log_future.result(timeout=LOG_WAIT_SECONDS)
            except FutureTimeout:
                return None
            self.log_future = None
        return self._retrieval_id

    @retrieval_id.setter
    def retrieval_id(self, value: int | None) -> None:
        self._retrieval_id = value
        self.log_future = None


@dataclass
class Candidate:
    id: str  # "fact:12", "message:34" (an exchange, keyed by its user message), "summary:5"
    kind: str  # fact | exchange | summary
    text: str
    channel: str
    timestamp: datetime
    memory_type: str = ""
    row_ids: tuple[int, ...] = ()


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


# What the owner reads for a source that failed with an error other than the memory's own.
MSG_SOURCE_FAILED = "incident inattendu, détail dans le journal du service"


def failure_text(exc: BaseException, source: str = "") -> str:
    """Why a source failed, in the owner's words, as ``failed_sources`` keeps it: a
    MemoryServiceError's own (French) message, MSG_SOURCE_FAILED for any other error (its
    class and text are a library's English, QA 3b). The error itself, class included,
    goes to the service log, naming the ``source``: an unexpected one with its traceback."""
    own = isinstance(exc, MemoryServiceError)
    logger.warning(
        "auto-retrieval source %s failed: %s: %s",
        source or "?",
        exc.__class__.__name__,
        exc,
        exc_info=None if own else exc,
    )
    said = str(exc).strip() if own else ""
    return (said or MSG_SOURCE_FAILED)[:FAILURE_TEXT_MAX]


def source_collect(
    future: Future, name: str, limit_s: float, started: float, result: RetrievalResult
):
    """A source's answer within what is left of its time limit; None (recorded) otherwise."""
    remaining = max(0.0, limit_s - (time.perf_counter() - started))
    try:
        return future.result(timeout=remaining)
    except FutureTimeout:
        future.cancel()
        result.failed_sources[name] = f"timeout after {int(limit_s * 1000)} ms"
    except Exception as exc:
        result.failed_sources[name] = failure_text(exc, name)
    return None
