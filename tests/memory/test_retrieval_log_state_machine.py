"""The turns a channel's next message sees, under any order of log commits (hypothesis stateful).

Rules: a retrieval is logged on a channel (its row goes to the writer thread,
which is held), some held rows are let through (their commits land while the
next reads run, without waiting for them), a write fails, the writer catches
up entirely.

After every step, for every channel and every depth: ``channel_turns`` gives
the channel's last retrievals, newest first, each exactly once, whether its row
is still queued, being committed, or in the table; a row whose write failed is
never counted once its failure is known. The next message never waits for a
commit to know them.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory.models import MemoryRetrieval
from memory.services.retrieval import log as retrieval_log
from memory.services.retrieval.result import RetrievalResult
from tests.stateful import stateful_settings

PROFILE = stateful_settings(examples=30, steps=30)
CHANNELS = ("whatsapp", "mission_control")
DEPTHS = (1, 2, 3, 5)


class Gate:
    """The writer's _write, held until the test lets rows through (one permit per row)."""

    def __init__(self, write) -> None:
        self.write = write
        self.permits = threading.Semaphore(0)
        self.failing: set[str] = set()  # the memory ids whose row the database refuses

    def __call__(self, fields, accessed):
        self.permits.acquire()
        if fields["memories"][0]["id"] in self.failing:
            return None  # as _write answers a row the database refused
        return self.write(fields, accessed)


GATE: Gate | None = None


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.turns: dict[str, list[str]] = {channel: [] for channel in CHANNELS}
        self.failed: set[str] = set()
        self.results: list[RetrievalResult] = []
        self.held = 0
        self.count = 0
        GATE.failing.clear()  # memory ids start again at 1 in every run

    @rule(channel=st.sampled_from(CHANNELS), fails=st.booleans())
    def retrieval_logged(self, channel, fails):
        self.count += 1
        memory_id = f"fact:{self.count}"
        result = RetrievalResult(channel=channel, message=f"message {self.count}")
        result.memories = [
            {"id": memory_id, "kind": "fact", "sources": [], "rrf": 0, "score": 0, "text": "x"}
        ]
        if fails:
            GATE.failing.add(memory_id)
            self.failed.add(memory_id)
        retrieval_log.retrieval_log_start(result)
        self.results.append(result)
        self.turns[channel].append(memory_id)
        self.held += 1

    @precondition(lambda self: self.held > 0)
    @rule(data=st.data())
    def some_rows_committed(self, data):
        """Let rows through without waiting: their commits land during the next reads."""
        n = data.draw(st.integers(min_value=1, max_value=self.held))
        self.held -= n
        for _ in range(n):
            GATE.permits.release()

    @rule()
    def writer_caught_up(self):
        for _ in range(self.held):
            GATE.permits.release()
        self.held = 0
        retrieval_log.retrieval_logs_wait(timeout=10)
        assert all(r.log_future is None or r.log_future.done() for r in self.results)

    @invariant()
    def every_turn_seen_once_newest_first(self):
        for channel in CHANNELS:
            for depth in DEPTHS:
                seen = [m[0]["id"] for m in retrieval_log.channel_turns(channel, depth)]
                # A failed row may still count while its write is in flight (the prompt did
                # carry it); once the failure is known it never does.
                expected = self.turns[channel][::-1]
                assert len(seen) == len(set(seen))
                candidates = [i for i in expected if i not in self.failed or i in seen]
                assert seen == candidates[:depth]

    def teardown(self):
        for _ in range(self.held):
            GATE.permits.release()
        retrieval_log.retrieval_logs_wait(timeout=10)
        # Once every write is known, a failed row is in no channel's turns.
        for channel in CHANNELS:
            seen = {m[0]["id"] for m in retrieval_log.channel_turns(channel, 50)}
            assert seen == set(self.turns[channel]) - self.failed
        MemoryRetrieval.objects.all().delete()


@pytest.mark.django_db(transaction=True)
def test_channel_turns_count_every_turn_once_under_any_commit_order(monkeypatch):
    global GATE
    from hypothesis.stateful import run_state_machine_as_test

    GATE = Gate(retrieval_log._write)
    monkeypatch.setattr(retrieval_log, "_write", GATE)
    try:
        run_state_machine_as_test(LogMachine, settings=PROFILE)
    finally:
        GATE.permits.release(1000)
        retrieval_log.retrieval_logs_wait(timeout=10)
        GATE = None
