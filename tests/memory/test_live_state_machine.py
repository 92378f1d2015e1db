"""The live path under any interleaving (hypothesis stateful, the house style of
test_indexing_state_machine.py).

Rules: a message is posted in an observed room (a fact or small talk), a queued
indexing task runs (any one, twice, or is lost), the digest runs, the owner
forgets a room message's topic, Qdrant goes down and comes back, time passes
and the sweep runs.

After every step: the index never lies about a live point (a row marked indexed
at its version has its live point at that version, or none because it must have
none: digested, forgotten, small talk), no digested or forgotten message is ever
injected by auto-retrieval, and no fact was stored twice. At each quiescent
point: every undigested, unforgotten observed message that is not small talk has
its point at its version, and `live` holds nothing else.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory.exceptions import StoreUnavailable
from memory.models import Fact, IndexState, Message
from memory.services import index_queue, indexing
from memory.stores import vectors as vectors_module
from memory.stores.vectors import LIVE, point_id
from tests.fakes.embedder import HashEmbedder
from tests.stateful import memory_wipe, qdrant_drop, qdrant_fresh, stateful_settings

PROFILE = stateful_settings(examples=25, steps=25)
ROOM = "lobby"
LATER = timedelta(hours=7)


class DownStore:
    """Qdrant unreachable: every call fails as the real stores fail."""

    def __getattr__(self, name):
        def down(*args, **kwargs):
            raise StoreUnavailable("Qdrant est injoignable (test).")

        return down


class World:
    def __init__(self, traveller, settings, monkeypatch) -> None:
        self.queue: list[tuple[str, int]] = []
        self.traveller = traveller
        self.settings = settings
        self.monkeypatch = monkeypatch
        self.down = False


WORLD: World | None = None
# The real factory, put back when Qdrant comes back (the rule patches the module's).
STORE_FACTORY = vectors_module.get_vector_store


def _extract(messages, *, misnumbered: bool = False):
    """The digest's LLM, faked: one fact per message that says something, its source
    numbered right (or, ``misnumbered``, every fact as from the batch's first message)."""
    from agent.extraction import FactCandidate
    from memory.services.relevance import is_small_talk

    found = []
    for position, message in enumerate(messages, start=1):
        if is_small_talk(message.content):
            continue
        token = message.content.split()[-1]
        candidate = FactCandidate(
            key=f"fait_{token}",
            value=f"repère {token}",
            memory_type="event",
            importance=None,
            subjects=(),
            ttl=None,
        )
        found.append({"candidate": asdict(candidate), "sources": [1 if misnumbered else position]})
    return found


class LiveMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from memory.models import ChannelSettings, Digest
        from memory.stores import embedders
        from memory.stores.vectors import get_vector_store

        assert WORLD is not None
        self.world = WORLD
        self.world.queue.clear()
        self.world.down = False
        memory_wipe()
        Digest.objects.all().delete()
        ChannelSettings.objects.update_or_create(channel=ROOM, defaults={"observed": True})
        self.world.monkeypatch.setattr(vectors_module, "get_vector_store", STORE_FACTORY)
        self.folder = qdrant_fresh(self.world.settings, prefix="makilab-live-")
        self.vectors = get_vector_store()
        embedders._embedder = HashEmbedder()
        self.counter = 0

    def teardown(self) -> None:
        try:
            self.settle()
        finally:
            qdrant_drop(self.folder)

    def _token(self) -> str:
        self.counter += 1
        return f"zorb{self.counter}x"

    # --- the room, the owner, the digest ---------------------------------------------------

    @rule(small_talk=st.booleans())
    def post_message(self, small_talk):
        from memory.services.messages import message_save

        text = "lol" if small_talk else f"David part en voyage {self._token()}"
        message = message_save(channel=ROOM, role="user", author="david", content=text)
        assert message.observed

    @rule()
    def digest(self):
        from agent import client, digest

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(client, "llm_available", lambda: True)
            patch.setattr(digest, "digest_extract", _extract)
            digest.digest_run(trigger="manual")

    @precondition(lambda self: Message.objects.filter(observed=True).exclude(content="lol"))
    @rule(data=st.data())
    def forget(self, data):
        from memory.services.forgetting import topic_forget

        rows = list(Message.objects.filter(observed=True).exclude(content="lol").order_by("id"))
        message = data.draw(st.sampled_from(rows))
        topic_forget(topic=message.content.split()[-1], actor="user")

    @rule(down=st.booleans())
    def qdrant(self, down):
        self.world.down = down
        factory = (lambda: DownStore()) if down else STORE_FACTORY
        self.world.monkeypatch.setattr(vectors_module, "get_vector_store", factory)

    # --- the workers and the beat -------------------------------------------------------

    def _run(self, kind: str, row_id: int) -> None:
        # Down: the row stays pending with a backoff, the sweep sends it again.
        with contextlib.suppress(StoreUnavailable):
            indexing.index_row(kind, row_id)

    @precondition(lambda self: self.world.queue)
    @rule(data=st.data(), twice=st.booleans())
    def run_task(self, data, twice):
        task = self.world.queue.pop(data.draw(st.integers(0, len(self.world.queue) - 1)))
        self._run(*task)
        if twice:
            self._run(*task)

    @precondition(lambda self: self.world.queue)
    @rule(data=st.data())
    def lose_task(self, data):
        self.world.queue.pop(data.draw(st.integers(0, len(self.world.queue) - 1)))

    @rule()
    def time_passes_and_sweep(self):
        self.world.traveller.shift(LATER)
        indexing.pending_sweep()

    def settle(self):
        self.qdrant(down=False)
        for _ in range(10):
            while self.world.queue:
                self._run(*self.world.queue.pop(0))
            self.world.traveller.shift(LATER)
            indexing.pending_sweep()
            if not self.world.queue:
                break
        else:
            stuck = Message.all_objects.filter(index_state=IndexState.PENDING)
            raise AssertionError(
                f"the live index never settles: {list(stuck.values('id', 'index_error'))}"
            )
        wanted = set()
        for message in Message.all_objects.filter(observed=True):
            assert message.index_state == IndexState.INDEXED, message.pk
            assert message.indexed_version == message.version
            if _wants_point(message):
                wanted.add(point_id("message", message.pk))
                [point] = self.vectors.retrieve(LIVE, [point_id("message", message.pk)])
                assert point.payload["version"] == message.version
        assert set(self.vectors.iter_ids(LIVE)) == wanted

    # --- the promises --------------------------------------------------------------------

    @invariant()
    def the_live_index_never_lies(self):
        if self.world.down:
            return  # nothing can be read from Qdrant; checked again once it is back
        for message in Message.all_objects.filter(observed=True):
            points = self.vectors.retrieve(LIVE, [point_id("message", message.pk)])
            indexed = message.index_state == IndexState.INDEXED
            if indexed:
                assert message.indexed_version == message.version
                if _wants_point(message):
                    assert [p.payload["version"] for p in points] == [message.version]
                else:
                    assert points == [], ("digested, forgotten or small talk", message.pk)
            else:  # the change is recorded: pending, its task (or the sweep) will act
                assert message.index_state == IndexState.PENDING, message.pk

    @invariant()
    def no_digested_or_forgotten_message_is_injected(self):
        from memory.services.retrieval.live import live_hydrate

        gone = Message.all_objects.filter(observed=True).exclude(
            forgetting__isnull=True, digested_at__isnull=True
        )
        hits = [(pk, 1.0) for pk in gone.values_list("id", flat=True)]
        assert live_hydrate(hits, now=timezone.now(), tz=timezone.get_current_timezone()) == []

    @invariant()
    def no_fact_is_stored_twice(self):
        values = list(Fact.all_objects.values_list("value", flat=True))
        assert len(values) == len(set(values))
        digested = Message.all_objects.filter(digested_at__isnull=False).exclude(content="lol")
        for message in digested.filter(forgetting__isnull=True):
            assert Fact.all_objects.filter(source_message=message).count() == 1, message.pk


def _wants_point(message: Message) -> bool:
    return (
        message.digested_at is None
        and message.forgetting_id is None
        and not message.memory_excluded
        and message.content != "lol"
    )


@pytest.mark.django_db(transaction=True)
def test_live_points_follow_t1_under_any_interleaving(monkeypatch, settings, time_machine):
    global WORLD
    from hypothesis.stateful import run_state_machine_as_test

    from memory.stores import embedders
    from memory.stores.vectors import vector_store_reset

    time_machine.move_to(timezone.now(), tick=False)
    WORLD = World(time_machine, settings, monkeypatch)
    monkeypatch.setattr(
        index_queue, "_send", lambda kind, row_ids: WORLD.queue.extend((kind, r) for r in row_ids)
    )
    monkeypatch.setattr(embedders, "_embedder", None)
    settings.QDRANT_URL = ""
    settings.ANTHROPIC_API_KEY = ""  # forgets use the word rule; the digest's LLM is faked
    try:
        run_state_machine_as_test(LiveMachine, settings=PROFILE)
    finally:
        vector_store_reset()
        WORLD = None
