"""The digest under any interleaving of the owner's forgets with its fact writes
(hypothesis stateful, the house style of tests/memory/test_live_state_machine.py).

The digest writes a batch's facts one short transaction at a time (it holds no lock
while dedup embeds or asks an LLM), then marks the batch's messages digested. Rules:
messages are posted in an observed room (one to three at once); the digest runs
alone, with the owner forgetting a message of its batch between two of its fact
writes (its LLM numbering every source right, or every fact as from the first
message), or stopped after its facts and before the marking; the owner forgets a
message's topic.

After every step: no fact drawn from a forgotten message is in memory (whatever the
LLM numbered), no fact is stored twice, and every digested message that is still in
memory has its fact. At the end, a last digest leaves no message undigested.
"""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memory.models import Fact, Message
from memory.services import index_queue
from tests.fakes.anthropic import text_message
from tests.fakes.embedder import HashEmbedder
from tests.memory.test_live_state_machine import _extract
from tests.stateful import memory_wipe, qdrant_drop, qdrant_fresh, stateful_settings

PROFILE = stateful_settings(examples=30, steps=12)
ROOM = "lobby"
SETTINGS = None


def _forget(message) -> None:
    """The owner forgets the message's topic (its token; the LLM's judgement is unusable,
    so the word rule takes what holds it)."""
    from memory.services.forgetting import topic_forget

    topic_forget(topic=message.content.split()[-1], actor="user")


def _llm(body: dict):
    """The fake Anthropic server's answers: dedup adds (each token is its own fact), any
    other call (the forget's judge) gets an answer it cannot use."""
    from memory.services.dedup import DEDUP_SYSTEM_PROMPT

    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system)
    if system.startswith(DEDUP_SYSTEM_PROMPT[:60]):
        return text_message(json.dumps({"action": "ADD", "id": None}))
    return text_message("pas du JSON")


def _undigested():
    return Message.objects.filter(observed=True, digested_at__isnull=True).order_by("id")


class DigestMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from memory.models import ChannelSettings, Digest
        from memory.stores import embedders

        memory_wipe()
        Digest.objects.all().delete()
        ChannelSettings.objects.update_or_create(channel=ROOM, defaults={"observed": True})
        self.folder = qdrant_fresh(SETTINGS, prefix="makilab-digest-")
        embedders._embedder = HashEmbedder()
        self.counter = 0

    def teardown(self) -> None:
        try:
            self._digest(misnumbered=False)
            assert not _undigested().exists()
            self.checks()
        finally:
            qdrant_drop(self.folder)

    def _digest(self, *, misnumbered: bool, patches=()) -> None:
        from agent import digest

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(digest, "digest_extract", lambda m: _extract(m, misnumbered=misnumbered))
            for target, name, value in patches:
                patch.setattr(target, name, value)
            digest.digest_run(trigger="manual")

    @rule(burst=st.integers(1, 3))
    def post_messages(self, burst):
        from memory.services.messages import message_save

        for _ in range(burst):
            self.counter += 1
            text = f"David part en voyage zorb{self.counter}x"
            message_save(channel=ROOM, role="user", author="david", content=text)

    @rule(misnumbered=st.booleans())
    def digest(self, misnumbered):
        self._digest(misnumbered=misnumbered)

    @precondition(lambda self: _undigested().exists())
    @rule(data=st.data(), misnumbered=st.booleans())
    def digest_with_a_forget_meanwhile(self, data, misnumbered):
        from agent import extraction

        batch = list(_undigested())
        victim = data.draw(st.sampled_from(batch))
        # Before the write of the victim's own fact (a forget after it takes the fact).
        after = data.draw(st.integers(0, batch.index(victim)))
        store = extraction.fact_candidate_store
        writes: list[int] = []

        def store_then_forget(*args, **kwargs):
            if len(writes) == after:
                _forget(victim)
            writes.append(1)
            return store(*args, **kwargs)

        self._digest(
            misnumbered=misnumbered,
            patches=[(extraction, "fact_candidate_store", store_then_forget)],
        )

    @precondition(lambda self: _undigested().exists())
    @rule(misnumbered=st.booleans())
    def digest_stops_before_marking(self, misnumbered):
        from memory.services import digest as service

        present = service._batch_present
        calls: list[int] = []

        def stop_at_the_marking(message_ids):
            calls.append(1)
            if len(calls) == 2:  # the read before the marking, after the facts
                raise RuntimeError("arrêt du processus (test)")
            return present(message_ids)

        with contextlib.suppress(RuntimeError):
            self._digest(
                misnumbered=misnumbered, patches=[(service, "_batch_present", stop_at_the_marking)]
            )

    @precondition(lambda self: Message.objects.filter(observed=True).exists())
    @rule(data=st.data())
    def forget(self, data):
        rows = list(Message.objects.filter(observed=True).order_by("id"))
        _forget(data.draw(st.sampled_from(rows)))

    @invariant()
    def checks(self):
        for message in Message.all_objects.filter(observed=True):
            token = message.content.split()[-1]
            facts = Fact.objects.filter(value=f"repère {token}")
            if message.forgetting_id is not None:
                assert not facts.exists(), ("drawn from a forgotten message", token)
                continue
            assert Fact.all_objects.filter(value=f"repère {token}").count() <= 1, token
            if message.digested_at is not None:
                assert facts.count() == 1, ("digested without its fact", token)


@pytest.mark.django_db(transaction=True)
def test_the_digest_under_any_interleaving_of_forgets(monkeypatch, settings, fake_anthropic):
    global SETTINGS
    from hypothesis.stateful import run_state_machine_as_test

    from memory.stores import embedders
    from memory.stores.vectors import vector_store_reset

    SETTINGS = settings
    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)
    monkeypatch.setattr(embedders, "_embedder", None)
    settings.QDRANT_URL = ""
    settings.ANTHROPIC_MAX_RETRIES = 0
    fake_anthropic.handler = _llm  # the digest's own call is faked (digest_extract)
    try:
        run_state_machine_as_test(DigestMachine, settings=PROFILE)
    finally:
        vector_store_reset()
        SETTINGS = None
