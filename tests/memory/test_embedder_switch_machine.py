"""Embedder switches under any interleaving (hypothesis stateful).

Two fake models of the same dimension, each stamping its vectors (the sign of
the first coordinate), so a point tells which model wrote it. The rules: the
owner stores and edits facts, a task runs (any queued one), a worker embeds
now and writes later (the model may have changed in between), the process
restarts on the other model (the switch: settings are read at start), the
sweep runs, `memory_doctor --fix` or `reindex --recreate` rebuilds (or is
stopped after its drop), a search asks.

After every step: a collection holds the vectors of the model it records, and
of no other; a search by another model than the recorded one is refused (never
ranked on noise); a row marked indexed has its point. After a rebuild on the
model in use, with the queue drained: every fact is indexed by that model.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from memory.exceptions import EmbedderMismatch
from memory.models import Fact, IndexState
from memory.services import index_claims, indexing
from memory.stores.vectors import KNOWLEDGE, point_id
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
    ci=stateful_settings(examples=30, steps=25),
    slow=stateful_settings(examples=200, steps=50),
)

KEYS = ("ville", "sport", "chat")
WORDS = ("Lyon", "vélo", "Moustache", "tennis", "Paris")
# Past every lease and backoff.
LATER = timedelta(hours=7)


class Model(HashEmbedder):
    """A fake model whose vectors carry its stamp: the sign of their first coordinate."""

    def __init__(self, name: str, stamp: float) -> None:
        super().__init__()
        self.name = name
        self.stamp = stamp

    def vector(self, text: str) -> list[float]:
        base = super().vector(text)
        stamped = [self.stamp, *(0.5 * x for x in base[1:])]
        norm = sum(x * x for x in stamped) ** 0.5
        return [x / norm for x in stamped]


MODELS = {"a": Model("test:model-a", 1.0), "b": Model("test:model-b", -1.0)}
STAMPS = {m.name: m.stamp for m in MODELS.values()}


WORLD: MachineWorld | None = None


class SwitchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert WORLD is not None
        self.world = WORLD
        self.world.examples += 1
        self.world.queue.clear()
        memory_wipe()
        self.folder = qdrant_fresh(self.world.settings, prefix="makilab-switch-")
        self.workers: list[index_claims.IndexClaim] = []
        self._use("a")

    def teardown(self) -> None:
        qdrant_drop(self.folder)

    def _use(self, model: str) -> None:
        """A (re)started process on ``model``: settings are read at start, the store reopened."""
        from memory.stores import embedders
        from memory.stores.vectors import get_vector_store, vector_store_reset

        vector_store_reset()
        self.model = MODELS[model]
        embedders._embedder = self.model
        self.store = get_vector_store()

    def _step(self) -> None:
        self.world.steps += 1

    # --- what happens ------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), word=st.sampled_from(WORDS))
    def owner_states(self, key, word):
        from memory.services.facts import fact_store

        self._step()
        fact_store(key=key, value=f"{key} : {word}")  # the owner's (Actor.USER)

    @precondition(lambda self: self.world.queue)
    @rule(data=st.data())
    def run_task(self, data):
        self._step()
        index = data.draw(st.integers(0, len(self.world.queue) - 1))
        kind, row_id = self.world.queue.pop(index)
        if indexing.index_row(kind, row_id).busy:
            self.world.queue.append((kind, row_id))

    @precondition(lambda self: Fact.objects.exists())
    @rule(data=st.data())
    def worker_embeds_now_writes_later(self, data):
        """A worker claims and embeds with the model of the moment; it writes later."""
        self._step()
        fact = data.draw(st.sampled_from(list(Fact.objects.order_by("pk"))))
        claim = index_claims.index_claim(indexing.KIND_FACT, [fact.pk], force=True)
        indexing.index_embed(claim)
        self.workers.append(claim)

    @precondition(lambda self: self.workers)
    @rule(data=st.data())
    def worker_writes(self, data):
        self._step()
        claim = self.workers.pop(data.draw(st.integers(0, len(self.workers) - 1)))
        indexing.index_write(claim)

    @precondition(lambda self: Fact.objects.exists())
    @rule(data=st.data())
    def a_worker_outlives_a_switch(self, data):
        """The interleaving the primitive rules reach too rarely: a worker embeds, the
        settings switch to the other model, the worker writes (onto a collection that
        may not exist yet, or was just rebuilt)."""
        self.worker_embeds_now_writes_later(data)
        self.process_restarts_on("b" if self.model is MODELS["a"] else "a")
        indexing.index_write(self.workers.pop())

    @rule(model=st.sampled_from(sorted(MODELS)))
    def process_restarts_on(self, model):
        self._step()
        self._use(model)

    @rule()
    def time_passes_and_the_sweep_runs(self):
        self._step()
        self.world.traveller.shift(LATER)
        indexing.pending_sweep()

    @rule()
    def doctor_fix(self):
        from memory.services.maintenance import memory_doctor

        self._step()
        memory_doctor(collection="knowledge", fix=True)
        self._drain_and_check_rebuilt()

    @rule()
    def reindex_recreate(self):
        from memory.services.maintenance import reindex

        self._step()
        reindex(collection="knowledge", recreate=True)
        self._drain_and_check_rebuilt()

    @rule()
    def reindex_recreate_interrupted(self):
        """`reindex --recreate` stopped after the drop (the embedder down, a kill): the
        rows are pending, the collection gone until a task or the sweep writes again."""
        from memory.services.maintenance import _requeue_and_drop

        self._step()
        _requeue_and_drop(self.store, KNOWLEDGE)

    @rule(word=st.sampled_from(WORDS))
    def search(self, word):
        self._step()
        recorded = self.store.collection_embedder(KNOWLEDGE)
        vector = self.model.embed_query(word)
        if recorded is not None and recorded != self.model.name:
            with pytest.raises(EmbedderMismatch):
                self.store.search(KNOWLEDGE, vector, limit=5)
        else:
            self.store.search(KNOWLEDGE, vector, limit=5)

    # --- the promises ------------------------------------------------------------------------

    def _points(self) -> list:
        if self.store.collection_dimension(KNOWLEDGE) is None:
            return []
        ids = list(self.store.iter_ids(KNOWLEDGE))
        return self.store.retrieve(KNOWLEDGE, ids, with_vectors=True)

    @invariant()
    def a_collection_holds_the_vectors_of_the_model_it_records(self):
        recorded = self.store.collection_embedder(KNOWLEDGE)
        for point in self._points():
            assert point.vector[0] * STAMPS[recorded] > 0, (
                f"a point of another model in a collection recorded as {recorded}"
            )

    @invariant()
    def a_row_marked_indexed_has_its_point(self):
        present = {p.id for p in self._points()}
        for fact in Fact.objects.filter(index_state=IndexState.INDEXED):
            if fact.indexed_version == fact.version:
                assert point_id("fact", fact.pk) in present, fact.key

    def _drain_and_check_rebuilt(self) -> None:
        """After a rebuild on the model in use, with every task run: all indexed by it."""
        for claim in self.workers:
            indexing.index_write(claim)  # late writers come back before the check
        self.workers.clear()
        for _ in range(6):
            while self.world.queue:
                indexing.index_row(*self.world.queue.pop(0))
            self.world.traveller.shift(LATER)
            indexing.pending_sweep()
        assert not self.world.queue
        if Fact.objects.exists():
            assert self.store.collection_embedder(KNOWLEDGE) == self.model.name
        assert set(Fact.objects.values_list("index_state", flat=True)) <= {IndexState.INDEXED}
        assert len(self._points()) == Fact.objects.count()


@pytest.mark.django_db(transaction=True)
def test_a_collection_never_mixes_two_models_under_any_interleaving(
    monkeypatch, settings, time_machine, capsys
):
    global WORLD
    WORLD = MachineWorld(time_machine, settings)
    captured_indexing(monkeypatch, settings, time_machine, WORLD.queue)
    world = WORLD
    try:
        machine_run(
            SwitchMachine,
            MACHINE_SETTINGS,
            capsys,
            lambda seconds: (
                f"embedder switch machine ({PROFILE}): {world.examples} examples, "
                f"{world.steps} operations, {seconds:.1f} s"
            ),
        )
    finally:
        WORLD = None
