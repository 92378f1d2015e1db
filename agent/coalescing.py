"""Coalescing: the messages of one channel arriving within a window get one answer.

The first message of a window leads its batch: it waits until the window closes
(each new message extends it, up to COALESCE_MAX_WINDOWS windows) and answers the
batch; the others follow it and return its result. Per process, like the answers
in flight (``answering``), whose messages another answer's extraction leaves alone.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from agent.chat_result import ChatResult
from agent.exceptions import LlmError, LlmUnavailable
from memory.models import Message

# A continuous stream of messages is answered after at most this many windows.
COALESCE_MAX_WINDOWS = 3
INTERRUPTED_MESSAGE = "La réponse a été interrompue avant la fin. Réessaie."


@dataclass
class Batch:
    messages: list[Message]
    started: float
    deadline: float
    closed: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    result: ChatResult | None = None
    error: BaseException | None = None


_batches: dict[str, Batch] = {}
_batches_lock = threading.Lock()
# The ids of the messages an answer of this process is working on: another answer's
# extraction leaves them to it (agent.loop._extraction_message_ids).
_answering: set[int] = set()


def coalesce_join_or_lead(channel: str, message: Message, window: float) -> tuple[Batch, bool]:
    """The open batch of the channel (joined) or a new one; True when we lead it."""
    now = time.monotonic()
    with _batches_lock:
        batch = _batches.get(channel)
        if batch is not None and not batch.closed:
            batch.messages.append(message)
            # Each new message extends the wait, up to a cap.
            batch.deadline = min(now + window, batch.started + window * COALESCE_MAX_WINDOWS)
            return batch, False
        batch = Batch(messages=[message], started=now, deadline=now + window)
        _batches[channel] = batch
        return batch, True


def coalesce_wait_and_close(channel: str, batch: Batch) -> list[Message]:
    while True:
        with _batches_lock:
            remaining = batch.deadline - time.monotonic()
            if remaining <= 0:
                batch.closed = True
                if _batches.get(channel) is batch:
                    del _batches[channel]
                return list(batch.messages)
        time.sleep(min(remaining, 0.05))


def coalesce_follow(batch: Batch) -> ChatResult:
    batch.done.wait()
    if batch.error is not None:
        error = batch.error
        if isinstance(error, GeneratorExit):  # the leader's streaming client went away
            interrupted = LlmUnavailable(INTERRUPTED_MESSAGE)
            interrupted.message_ids = tuple(m.id for m in batch.messages)
            raise interrupted
        if isinstance(error, LlmError):
            copy = type(error)(str(error))
            copy.message_ids = getattr(error, "message_ids", ())
            raise copy from error
        raise error
    assert batch.result is not None
    return batch.result


@contextlib.contextmanager
def answering(message_ids: list[int]) -> Iterator[None]:
    """Mark these messages as being answered by this process for the block's duration."""
    with _batches_lock:
        _answering.update(message_ids)
    try:
        yield
    finally:
        with _batches_lock:
            _answering.difference_update(message_ids)


def answering_others(message_ids: list[int]) -> set[int]:
    """The messages other answers of this process are working on."""
    with _batches_lock:
        return _answering - set(message_ids)
