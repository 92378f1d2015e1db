"""The indexing state machine under any interleaving (hypothesis stateful).

The rules are what the owner, the agent, the beat and the workers do: store and
restate facts, edit, forget, restore, let a TTL run out and purge, chat (with
replies arriving late, and system notices the agent answers), run any queued
task (out of order, twice, busy), lose one, start a task and finish it later
(two workers on one row: ``index_claim`` + ``index_embed`` now,
``index_write`` after anything else happened), kill a worker mid-task, let time
pass (leases, the sweep's grace, backoffs run out), sweep, reindex.

After every step: the index never lies (a row marked indexed at its version has
a point carrying that version and its current text, or no point because it must
have none) and no owner edit is lost. At each quiescent point (in-flight
workers finished, the queue drained, time past every lease, grace and backoff,
the purge and the sweep run until nothing moves): T1 and Qdrant agree row by row
and version by version, nothing is pending, and nothing forgotten is reachable
by search (text, semantic, hybrid) or auto-retrieval.

Real SQLite (FTS5) and a real embedded Qdrant created per example; the fake
bag-of-words embedder (tests/fakes/embedder.py) keeps it fast. CI runs a bounded
profile; HYPOTHESIS_PROFILE=slow runs many more examples and longer ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from memory.models import Fact, IndexState, Message, MessageRole
from memory.services import index_claims, indexing
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, point_id
from tests.fakes.embedder import HashEmbedder
from tests.stateful import (
    MachineWorld,
    captured_indexing,
    machine_profile,
    machine_run,
    memory_wipe,
    qdrant_drop,
    qdrant_fresh,
    stateful_settings,
)

PROFILE, MACHINE_SETTINGS = machine_profile(
    ci=stateful_settings(examples=50, steps=30),
    slow=stateful_settings(examples=300, steps=60),
)

KEYS = ("ville", "sport")
CHANNEL = "whatsapp"
FACT_CHANGES = ("edit", "restate", "forget", "restore", "expire")
MESSAGE_CHANGES = ("reply", "nothing")
# Past every lease (60 s), the sweep's grace (2 min) and the backoff cap (6 h).
LATER = timedelta(hours=7)
SETTLE_ROUNDS = 12
# Steps between two quiescent checks, at least (hypothesis would otherwise pick it often).
SETTLE_EVERY = 4


@dataclass
class Expected:
    """What the owner set about a key (created with, or changed to): no agent write may
    change it. ``values``: every value anyone stated for the key."""

    values: set[str]
    owner_value: str | None = None
    owner_importance: float | None = None
    # The fact the owner forgot, set aside when the agent stated its key: it stays forgotten.
    set_aside: int | None = None


WORLD: MachineWorld | None = None


class IndexingMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from memory.stores import embedders
        from memory.stores.vectors import get_vector_store

        assert WORLD is not None
        self.world = WORLD
        self.world.examples += 1
        self.world.queue.clear()
        memory_wipe()
        self.folder = qdrant_fresh(self.world.settings, prefix="makilab-machine-")
        self.vectors = get_vector_store()
        self.embedder = HashEmbedder()
        embedders._embedder = self.embedder
        self.expected: dict[str, Expected] = {}
        # Keys whose fact the owner forgot one by one: the agent stating one starts a new
        # fact, the forgotten one set aside under a key of its own (fact_store).
        self.owner_forgotten: set[str] = set()
        self.delivered: list[tuple[str, int]] = []
        self.workers: list[index_claims.IndexClaim] = []
        self.counter = 0
        self.since_settle = 0

    def teardown(self) -> None:
        try:
            self.settle()
        finally:
            qdrant_drop(self.folder)

    def _step(self) -> None:
        self.world.steps += 1
        self.since_settle += 1

    def _token(self) -> str:
        self.counter += 1
        return f"zorb{self.counter}x"

    def _fact(self, key: str) -> Fact | None:
        return Fact.all_objects.filter(key=key).first()

    def _owner_wrote(self, key: str, before: Fact | None, *, value=None, importance=None) -> None:
        """The owner created the fact with, or changed, these fields: they are the owner's."""
        expected = self.expected[key]
        if value is not None and (before is None or before.value != value):
            expected.owner_value = value
        if importance is not None and (before is None or before.importance != importance):
            expected.owner_importance = importance

    # --- the owner and the agent ----------------------------------------------------------

    @rule(
        key=st.sampled_from(KEYS),
        actor=st.sampled_from(["user", "agent"]),
        importance=st.sampled_from([None, 0.2, 0.9]),
    )
    def store(self, key, actor, importance):
        from memory.services.facts import fact_store

        self._step()
        value = f"{key} repère {self._token()} noté"
        before = self._fact(key)
        fact_store(key=key, value=value, importance=importance, actor=actor)
        self._stated(key, value, actor, before)
        if actor == "user":
            self._owner_wrote(key, before, value=value, importance=importance)

    def _stated(self, key: str, value: str, actor: str, before: Fact | None) -> None:
        if key in self.owner_forgotten:
            # A new fact, with nothing of the owner's, whoever states the key again (the owner
            # too: memory.services.facts.fact_store sets the forgotten one aside; a CI run
            # found the model keeping the owner's importance of the forgotten fact).
            self.expected[key] = Expected(values={value}, set_aside=before.pk)
        else:
            self.expected.setdefault(key, Expected(values=set())).values.add(value)
        self.owner_forgotten.discard(key)

    @rule(key=st.sampled_from(KEYS), importance=st.sampled_from([0.3, 0.6, 1.0]))
    def owner_edit(self, key, importance):
        from memory.services.facts import fact_update

        self._step()
        fact = self._fact(key)
        if fact is not None:
            before = self._fact(key)  # fact_update refreshes the instance it is given
            fact_update(fact=fact, actor="user", importance=importance)
            self._owner_wrote(key, before, importance=importance)
            self.owner_forgotten.discard(key)  # the owner's edit brings a forgotten fact back

    @rule(key=st.sampled_from(KEYS))
    def forget(self, key):
        from memory.services.facts import fact_forget

        self._step()
        fact = self._fact(key)
        if fact is not None:
            if not fact.forgotten:  # (forgotten by its expiry: fact_forget changes nothing)
                self.owner_forgotten.add(key)
            fact_forget(fact=fact, actor="user")
            assert self._fact(key).forgotten
            self._owner_forgot(key)

    @rule(key=st.sampled_from(KEYS))
    def restore(self, key):
        from memory.services.facts import fact_restore

        self._step()
        fact = self._fact(key)
        if fact is not None:
            fact_restore(fact=fact, actor="user")
            fact = self._fact(key)
            assert not fact.forgotten and not fact.is_expired
            self.owner_forgotten.discard(key)

    @rule(key=st.sampled_from(KEYS))
    def ttl_runs_out(self, key):
        """The fact's TTL is over (time passing: no write, no version change). An expired
        fact is read as the purge leaves it before the purge comes (fact_update): the
        owner's words ran out, the agent's news may bring the fact back in its words."""
        self._step()
        fact = self._fact(key)
        if fact is not None and not fact.forgotten and fact.forgetting_id is None:
            self._owner_forgot(key)
        Fact.all_objects.filter(key=key).update(expires_at=timezone.now() - timedelta(seconds=1))

    @rule()
    def purge_expired(self):
        self._step()
        self._purge()

    def _purge(self) -> None:
        """The beat's purge. A fact it takes is forgotten like one the owner forgot: the
        owner's words ran out, and the agent's news may bring the fact back in its words."""
        from memory.services.expiry import expired_purge

        before = set(Fact.all_objects.filter(forgotten=False).values_list("key", flat=True))
        expired_purge()
        after = set(Fact.all_objects.filter(forgotten=False).values_list("key", flat=True))
        for key in before - after:
            self._owner_forgot(key)
            self.owner_forgotten.discard(key)  # forgotten by its expiry, not by the owner

    @rule(with_reply=st.booleans())
    def chat(self, with_reply):
        from memory.services.messages import message_save

        self._step()
        question = message_save(
            channel=CHANNEL, role="user", content=f"question sur {self._token()}"
        )
        if with_reply:
            message_save(
                channel=CHANNEL,
                role="assistant",
                content=f"réponse {self._token()}",
                reply_to_id=question.id,
            )

    @precondition(
        lambda self: Message.all_objects.filter(
            role=MessageRole.USER, replies__isnull=True
        ).exists()
    )
    @rule(data=st.data())
    def late_reply(self, data):
        from memory.services.messages import message_save

        self._step()
        waiting = list(
            Message.all_objects.filter(role=MessageRole.USER, replies__isnull=True).order_by("id")
        )
        question = data.draw(st.sampled_from(waiting))
        message_save(
            channel=CHANNEL,
            role="assistant",
            content=f"réponse tardive {self._token()}",
            reply_to_id=question.id,
        )

    @rule()
    def system_notice_and_reply(self):
        from memory.services.messages import message_save

        self._step()
        notice = message_save(
            channel=CHANNEL, role="system", content="Rappel automatique", source="system"
        )
        message_save(
            channel=CHANNEL, role="assistant", content="C'est noté.", reply_to_id=notice.id
        )

    # --- the workers, the broker, the beat --------------------------------------------------

    def _run(self, kind: str, row_id: int) -> None:
        self.delivered.append((kind, row_id))
        report = indexing.index_row(kind, row_id)
        if report.busy:  # the task retries once the lease that holds the row is over
            self.world.queue.append((kind, row_id))

    @precondition(lambda self: self.world.queue)
    @rule(data=st.data())
    def run_task(self, data):
        """Any queued task, not necessarily the oldest."""
        self._step()
        index = data.draw(st.integers(0, len(self.world.queue) - 1))
        self._run(*self.world.queue.pop(index))

    @precondition(lambda self: self.delivered)
    @rule(data=st.data())
    def deliver_again(self, data):
        """A task the broker delivers a second time (acks_late after a worker died), late."""
        self._step()
        self._run(*data.draw(st.sampled_from(self.delivered)))

    @precondition(lambda self: self.world.queue)
    @rule(data=st.data())
    def lose_task(self, data):
        self._step()
        self.world.queue.pop(data.draw(st.integers(0, len(self.world.queue) - 1)))

    def _rows(self) -> list[tuple[str, int]]:
        """The rows that have an indexing task: facts and exchange roots."""
        rows = [("fact", pk) for pk in Fact.all_objects.order_by("pk").values_list("pk", flat=True)]
        return rows + [("message", m.pk) for m in _roots()]

    def _take(self, data) -> tuple[str, int]:
        """A row a worker gets a task for: its queued task, or a duplicate (a redelivery,
        a sweep's send) when none is queued."""
        rows = self._rows()
        task = data.draw(st.sampled_from(rows))
        if task in self.world.queue:
            self.world.queue.remove(task)
        self.delivered.append(task)
        return task

    @precondition(lambda self: self._rows())
    @rule(data=st.data())
    def start_worker(self, data):
        """A worker claims its row and embeds it, then stalls before writing."""
        self._step()
        kind, row_id = self._take(data)
        claim = index_claims.index_claim(kind, [row_id])
        indexing.index_embed(claim)
        self.workers.append(claim)

    @precondition(lambda self: self._rows())
    @rule(data=st.data())
    def a_stale_worker_writes_after_another(self, data):
        """The race of the issue: worker A embeds a row; the row changes; A's lease runs
        out; worker B indexes the change; then A writes what it embedded and finishes."""
        self._step()
        self._two_workers(data, lease_runs_out=True, other_runs=True)

    @precondition(lambda self: self._rows())
    @rule(data=st.data(), lease_runs_out=st.booleans(), other_runs=st.booleans())
    def two_workers_on_one_row(self, data, lease_runs_out, other_runs):
        """Worker A embeds a row; the row changes; maybe A's lease runs out, maybe worker B
        runs the change's task (or A's own, delivered twice); then A writes and finishes."""
        self._step()
        self._two_workers(data, lease_runs_out=lease_runs_out, other_runs=other_runs)

    def _two_workers(self, data, *, lease_runs_out: bool, other_runs: bool) -> None:
        kind, row_id = self._take(data)
        meanwhile = data.draw(
            st.sampled_from(MESSAGE_CHANGES if kind == "message" else FACT_CHANGES)
        )
        claim = index_claims.index_claim(kind, [row_id])
        indexing.index_embed(claim)
        self._change(kind, row_id, meanwhile)
        if lease_runs_out:
            self.world.traveller.shift(index_claims.LEASE + timedelta(seconds=1))
        if other_runs:
            mine = [task for task in self.world.queue if task == (kind, row_id)] or [(kind, row_id)]
            for task in mine:
                if task in self.world.queue:
                    self.world.queue.remove(task)
                self.delivered.append(task)
                indexing.index_row(*task)
        indexing.index_write(claim)

    def _change(self, kind: str, row_id: int, what: str) -> None:
        from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
        from memory.services.messages import message_save

        if kind == "message":
            root = Message.all_objects.filter(pk=row_id, role=MessageRole.USER).first()
            if what == "reply" and root is not None and not root.replies.exists():
                message_save(
                    channel=CHANNEL,
                    role="assistant",
                    content=f"réponse pendant l'indexation {self._token()}",
                    reply_to_id=root.id,
                )
            return
        fact = Fact.all_objects.filter(pk=row_id).first()
        if fact is None:
            return
        if fact.key not in self.expected and what in ("edit", "restate"):
            return  # a fact set aside: the owner's to restore, no key the model follows
        if what == "edit":
            before = self._fact(fact.key)
            fact_update(fact=fact, actor="user", importance=0.45)
            self._owner_wrote(fact.key, before, importance=0.45)
            self.owner_forgotten.discard(fact.key)  # the owner's edit brings it back
        elif what == "restate":
            value = f"{fact.key} repère {self._token()} noté"
            fact_store(key=fact.key, value=value, actor="agent")
            self._stated(fact.key, value, "agent", fact)
        elif what == "forget":
            already = fact.forgotten  # (forgotten by its expiry: fact_forget changes nothing)
            fact_forget(fact=fact, actor="user")
            self._owner_forgot(fact.key)
            if not already and fact.key in self.expected:
                self.owner_forgotten.add(fact.key)
        elif what == "restore":
            fact_restore(fact=fact, actor="user")
            self.owner_forgotten.discard(fact.key)
        elif what == "expire":
            Fact.all_objects.filter(pk=row_id).update(
                expires_at=timezone.now() - timedelta(seconds=1)
            )
            self._purge()

    @precondition(lambda self: self.workers)
    @rule(data=st.data())
    def finish_worker(self, data):
        """A stalled worker wakes up: it writes what it embedded back then, and finishes."""
        self._step()
        claim = self.workers.pop(data.draw(st.integers(0, len(self.workers) - 1)))
        indexing.index_write(claim)

    @precondition(lambda self: self.workers)
    @rule(data=st.data())
    def kill_worker(self, data):
        """A stalled worker dies: its lease is left to run out."""
        self._step()
        self.workers.pop(data.draw(st.integers(0, len(self.workers) - 1)))

    @rule(seconds=st.sampled_from([5, 61, 150, 3600]))
    def time_passes(self, seconds):
        self._step()
        self.world.traveller.shift(timedelta(seconds=seconds))

    @rule()
    def sweep(self):
        self._step()
        indexing.pending_sweep()

    @rule()
    def reindex(self):
        from memory.services.maintenance import reindex

        self._step()
        reindex()

    @precondition(lambda self: self.since_settle >= SETTLE_EVERY)
    @rule()
    def quiesce(self):
        self._step()
        self.settle()

    def settle(self):
        """Quiescence: workers finish, the queue drains, time passes, the beat runs."""
        self.world.settles += 1
        self.since_settle = 0
        while self.workers:
            indexing.index_write(self.workers.pop(0))
        for _ in range(SETTLE_ROUNDS):
            while self.world.queue:
                kind, row_id = self.world.queue.pop(0)
                self.delivered.append((kind, row_id))
                indexing.index_row(kind, row_id)  # a busy row is left to the sweep
            self.world.traveller.shift(LATER)
            self._purge()
            indexing.pending_sweep()
            if not self.world.queue:
                break
        else:
            raise AssertionError(f"indexing never settles: {self.world.queue}")
        self._check_quiescent()

    # --- the promises --------------------------------------------------------------------------

    @invariant()
    def the_index_never_lies(self):
        """A row marked indexed is at its version; its point carries that version and its
        current text, or it has no point because it must have none."""
        now = timezone.now()
        facts = {f.pk: f for f in Fact.all_objects.filter(index_state=IndexState.INDEXED)}
        for fact in facts.values():
            assert fact.indexed_version == fact.version, (fact.key, "indexed at an old version")
        points = self._points(KNOWLEDGE, "fact", facts)
        for pk, fact in facts.items():
            point = points.get(pk)
            if point is None:
                assert not _fact_live(fact, now), f"live fact {fact.key} indexed without a point"
            else:
                assert point.payload["version"] == fact.version, (fact.key, point.payload)
                assert point.payload["content"] == fact.value, (fact.key, point.payload)
        roots = {m.pk: m for m in _roots() if m.index_state == IndexState.INDEXED}
        for root in roots.values():
            assert root.indexed_version == root.version, (root.pk, "indexed at an old version")
        points = self._points(CONVERSATIONS, "message", roots)
        for pk, root in roots.items():
            point = points.get(pk)
            if point is None:
                assert root.forgetting_id is not None or root.memory_excluded
            else:
                assert point.payload["version"] == root.version
                assert point.payload["user_message"] == root.content
                assert point.payload["assistant_message"] == _reply_text(root)

    def _owner_forgot(self, key: str) -> None:
        """The owner let go of the words they wrote: the agent's news may replace them when
        it brings the fact back (memory.services.facts.fact_update); their other settings stay."""
        if key in self.expected:
            self.expected[key].owner_value = None

    @invariant()
    def no_owner_edit_is_lost(self):
        for key, expected in self.expected.items():
            fact = self._fact(key)
            assert fact is not None, key
            assert fact.value in expected.values, (key, fact.value)
            if expected.owner_value is not None:
                assert fact.value == expected.owner_value, (key, fact.value, expected.owner_value)
            if expected.owner_importance is not None:
                assert fact.importance == expected.owner_importance, (key, fact.importance)
            if expected.set_aside is not None:
                assert fact.pk != expected.set_aside, key

    def _points(self, collection: str, kind: str, rows: dict) -> dict[int, object]:
        ids = {point_id(kind, pk): pk for pk in rows}
        return {ids[hit.id]: hit for hit in self.vectors.retrieve(collection, list(ids))}

    def _check_quiescent(self) -> None:
        now = timezone.now()
        for model in (Fact, Message):
            stuck = model.all_objects.exclude(
                index_state__in=[IndexState.INDEXED, IndexState.SKIPPED]
            )
            assert not stuck.exists(), list(stuck.values("id", "index_state", "index_error"))
            assert not model.all_objects.exclude(index_lease_token="").exists()
        wanted_knowledge: set[str] = set()
        for fact in Fact.all_objects.all():
            assert fact.indexed_version == fact.version, fact.key
            if _fact_live(fact, now):
                wanted_knowledge.add(point_id("fact", fact.pk))
                [point] = self.vectors.retrieve(
                    KNOWLEDGE, [point_id("fact", fact.pk)], with_vectors=True
                )
                assert point.payload["version"] == fact.version
                assert point.payload["content"] == fact.value
                assert point.payload["importance"] == fact.importance
                assert point.vector == pytest.approx(
                    self.embedder.vector(indexing.fact_text(fact)), abs=1e-5
                )
        assert set(self.vectors.iter_ids(KNOWLEDGE)) == wanted_knowledge
        wanted_conversations: set[str] = set()
        for root in _roots():
            assert root.indexed_version == root.version
            wanted_conversations.add(point_id("message", root.pk))
            [point] = self.vectors.retrieve(CONVERSATIONS, [point_id("message", root.pk)])
            assert point.payload["version"] == root.version
            assert (point.payload["user_message"], point.payload["assistant_message"]) == (
                root.content,
                _reply_text(root),
            )
        assert set(self.vectors.iter_ids(CONVERSATIONS)) == wanted_conversations
        for message in Message.all_objects.exclude(role__in=[MessageRole.USER]):
            parent = message.reply_to
            expected = (
                IndexState.INDEXED
                if message.role == MessageRole.ASSISTANT and parent and parent.role == "user"
                else IndexState.SKIPPED
            )
            assert message.index_state == expected, (message.pk, message.role)
        self._check_forgotten_unreachable(now)

    def _check_forgotten_unreachable(self, now) -> None:
        from memory.services.retrieval import auto_retrieve
        from memory.services.search import memory_search

        gone = [f for f in Fact.all_objects.all() if not _fact_live(f, now)]
        live = [f for f in Fact.all_objects.all() if _fact_live(f, now)]
        for fact in live:  # FTS agrees with T1
            word = fact.value.split()[2]
            hits = memory_search(query=word, mode="text")
            assert any(h.kind == "fact" and h.key == fact.key for h in hits), fact.value
        if not gone:
            return
        words = [f.value.split()[2] for f in gone]
        query = " ".join(words)
        for mode in ("text", "semantic", "hybrid"):
            for hit in memory_search(query=query, mode=mode, limit=50):
                assert not (hit.kind == "fact" and hit.key in {f.key for f in gone}), (mode, hit)
                assert not any(w in hit.excerpt for w in words), (mode, hit)
        result = auto_retrieve(message=query, channel="mission_control")
        seen = result.prompt_block + repr(result.memories) + repr(result.core)
        assert not any(w in seen for w in words), seen


def _fact_live(fact: Fact, now) -> bool:
    """Whether a fact must have a point: not forgotten, not taken by a topic forget, not expired."""
    expired = fact.expires_at is not None and fact.expires_at <= now
    return not (fact.forgotten or fact.forgetting_id is not None or expired)


def _roots() -> list[Message]:
    return list(Message.all_objects.filter(role=MessageRole.USER, reply_to__isnull=True))


def _reply_text(root: Message) -> str:
    reply = (
        Message.all_objects.filter(reply_to=root, role=MessageRole.ASSISTANT)
        .order_by("created_at", "id")
        .first()
    )
    return reply.content if reply else ""


@pytest.mark.django_db(transaction=True)
def test_the_index_agrees_with_t1_under_any_interleaving_of_writes_and_workers(
    monkeypatch, settings, time_machine, capsys
):
    global WORLD
    WORLD = MachineWorld(time_machine, settings)
    captured_indexing(monkeypatch, settings, time_machine, WORLD.queue)
    world = WORLD
    try:
        machine_run(
            IndexingMachine,
            MACHINE_SETTINGS,
            capsys,
            lambda seconds: (
                f"indexing state machine ({PROFILE}): {world.examples} examples, "
                f"{world.steps} operations ({world.steps / max(1, world.examples):.1f} per "
                f"example), {world.settles} quiescent checks, {seconds:.1f} s"
            ),
        )
    finally:
        WORLD = None
