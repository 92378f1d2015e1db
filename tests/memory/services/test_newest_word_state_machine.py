"""Whatever order the words about a fact arrive in, the memory holds the newest (hypothesis
stateful).

The words: the owner's messages, whose extraction runs late, in any order, twice (dated by
the message); the agent's writes with no message, the API's POST and PATCH (dated by their
writing, when they change the value: an unchanged restatement writes nothing); the owner's
edits (a change of the value: re-sent unchanged, it is not the owner's word), which the
agent never overwrites. The clock moves one second a step.

After every step: the fact holds the value of the newest word applied so far, whichever
ran last; once the owner edited it, the owner's latest value, whatever the agent says next.
QA 9b: a late extraction of an older message replaced the API's newer word.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memory.models import Actor, Fact
from memory.services.facts import fact_store, fact_update
from memory.services.messages import message_save
from tests.stateful import memory_wipe, stateful_settings

PROFILE = stateful_settings(examples=40, steps=14)
KEY = "ville"
VALUES = ("Habite à Lyon", "Habite à Paris", "Habite à Nantes", "Habite à Lille")
START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
# Writes with no message sort after every message said at the same second (never equal here).
NO_MESSAGE = float("inf")


class NewestWordMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        memory_wipe()
        self.clock = START
        self.said: list[tuple[int, str, datetime]] = []  # (message id, value, said at)
        self.applied: list[tuple[datetime, float, str]] = []  # (dated, tie-break, value)
        self.owner_value: str | None = None

    def _step(self):
        self.clock += timedelta(seconds=1)
        return time_machine.travel(self.clock, tick=False)

    @rule(value=st.sampled_from(VALUES))
    def owner_says(self, value):
        with self._step():
            message = message_save(channel="whatsapp", role="user", content=f"Note : {value}")
        self.said.append((message.id, value, self.clock))

    @precondition(lambda self: self.said)
    @rule(data=st.data())
    def an_extraction_runs(self, data):
        """Any message said so far: late, out of order, or a second time."""
        message_id, value, said_at = data.draw(st.sampled_from(self.said))
        with self._step():
            fact_store(
                key=KEY,
                value=value,
                actor=Actor.AGENT,
                source_message_id=message_id,
                extracted=True,
            )
        self.applied.append((said_at, message_id, value))

    @rule(value=st.sampled_from(VALUES), patch=st.booleans())
    def the_agent_writes_without_a_message(self, value, patch):
        """The API's POST (fact_store) or PATCH (fact_update) with the agent's token."""
        fact = Fact.objects.filter(key=KEY).first()
        before = fact.value if fact is not None else None
        with self._step():
            if patch and fact is not None:
                fact_update(fact=fact, actor=Actor.AGENT, value=value)
            else:
                fact_store(key=KEY, value=value, actor=Actor.AGENT, extracted=False)
        if before != value:
            # A restatement that changes nothing writes nothing (fact_store): not a new word.
            self.applied.append((self.clock, NO_MESSAGE, value))

    @precondition(lambda self: Fact.objects.filter(key=KEY).exists())
    @rule(value=st.sampled_from(VALUES))
    def the_owner_edits(self, value):
        fact = Fact.objects.get(key=KEY)
        before = fact.value
        with self._step():
            fact_update(fact=fact, actor=Actor.USER, value=value)
        if before != value or self.owner_value is not None:
            # A value re-sent unchanged is not the owner writing it (fact_ownership).
            self.owner_value = value

    @invariant()
    def the_fact_holds_the_newest_word(self):
        fact = Fact.objects.filter(key=KEY).first()
        if not self.applied and self.owner_value is None:
            assert fact is None
            return
        assert fact is not None
        if self.owner_value is not None:
            assert fact.value == self.owner_value, "the agent overwrote the owner's edit"
            return
        newest = max(self.applied)[2]
        assert fact.value == newest, (fact.value, sorted(self.applied))
        assert Fact.all_objects.filter(key__iexact=KEY).count() == 1


@pytest.mark.django_db
def test_the_newest_word_wins_whatever_order_the_words_arrive_in():
    run_state_machine_as_test(NewestWordMachine, settings=PROFILE)
