"""The memory's promises as invariants, under any order of events (hypothesis stateful).

Rules are what users and workers do: store, restate, edit, rename (the admin's),
forget, restore, erase, expire, say something in a chat that a late extraction states
again (under the key the fact had then, maybe renamed since), chat (an outside agent's
exchange may hold a tool result), state a fact about the topic, forget the topic, undo
it or purge it, export and import an older export (nothing purged comes back), and the
indexing tasks run out of order, twice, late, lost, or raced by a second worker holding
the same row. Against the real SQLite (FTS5) and the real embedded Qdrant with the
bundled embedder.

After every step: nothing forgotten is reachable by a read path, no owner edit or
rename was lost, what the owner forgot stays forgotten until the owner gives it back,
and no two live facts have keys that look alike; a late statement of the key a fact had
when its message was written brings nothing back when the owner forgot or erased it
since, and lands on that fact alone when the owner renamed it since; after a topic
forget no row about it is left in memory, and its undo gives back forgotten what the
owner had forgotten alone. At each settle point (the sweep and the queued tasks
drained): T1 and Qdrant agree row by row and version by version, and nothing is pending.

CI runs a bounded number of examples; HYPOTHESIS_PROFILE=slow runs many more.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memory.exceptions import FactKeyLookAlike, SourceForgotten
from memory.models import FACT_ASIDE_KEY_PATTERN, Actor, Fact, IndexState, Message, fact_key_folded
from memory.services import index_claims, index_queue, indexing
from tests.stateful import memory_wipe

KEYS = ("velo", "cafe", "chien")
VALUES = {
    "velo": ("Le vélo est au garage", "Le vélo est réparé"),
    "cafe": ("Café serré sans sucre", "Café allongé"),
    "chien": ("Le chien s'appelle Filou", "Le chien s'appelle Rex"),
}
SECRET = "Zanzibar"
TRIP = "voyage_ete"  # a fact about the topic
TRIP_VALUE = f"Voyage à {SECRET} en août avec Sophie"
# What a message says about a fact, which its late extraction states again.
STATED = {**VALUES, TRIP: (TRIP_VALUE, f"Le voyage à {SECRET} est en août")}
# The keys the owner renames a fact to, its first one included (a rename back); « Velo »
# only looks like « velo » (the owner fixing its spelling).
NAMES = {
    "velo": ("velo", "bicyclette", "Velo"),
    "cafe": ("cafe", "boisson_du_matin"),
    "chien": ("chien", "animal"),
    TRIP: (TRIP, "vacances"),
}
ALL_NAMES = tuple(name for names in NAMES.values() for name in names)
PROFILES = {
    "ci": settings(max_examples=40, stateful_step_count=40, deadline=None),
    "slow": settings(max_examples=200, stateful_step_count=60, deadline=None),
}
PROFILE = PROFILES[os.environ.get("HYPOTHESIS_PROFILE", "ci")]
STATS = {"examples": 0, "steps": 0}


class MemoryMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, get_vector_store

        memory_wipe()
        self.store = get_vector_store()
        for collection in (CONVERSATIONS, KNOWLEDGE):
            self.store.drop_collection(collection)
        QUEUE.clear()
        self.owner_importance: dict[int, float] = {}  # per fact: what the owner set, last
        # Per topic forget: its id, what the owner had forgotten alone before, what it took live.
        self.forgotten_topics: list[tuple[int, set[int], set[int]]] = []
        self.exports: list[list[str]] = []  # files the owner exported, oldest first
        # What purges deleted for good: (content, created_at) of messages, (key, value) of facts.
        self.purged_messages: set[tuple] = set()
        self.purged_facts: set[tuple] = set()
        self.tick = 0  # the model's clock: what was said before which rename or purge
        self.purged_at = 0
        # Messages a late extraction draws statements from: (id, fact it is about, tick,
        # {key: fact} of the live facts the keys of NAMES named when it was written).
        self.said: list[tuple[int, str, int, dict[str, int]]] = []
        self.renames: list[tuple[int, str, int]] = []  # the owner's: (fact, key it left, tick)
        self.owner_key: dict[int, str] = {}  # per fact: the key the owner gave it, last
        self.owner_forgot: set[int] = set()  # forgotten by the owner, not given back since
        self.erased: set[int] = set()
        STATS["examples"] += 1

    # --- users ------------------------------------------------------------------------

    @rule(key=st.sampled_from(KEYS), which=st.integers(0, 1), agent=st.booleans())
    def store(self, key, which, agent):
        from memory.services.dedup import fact_remember
        from memory.services.facts import fact_store

        value = VALUES[key][which]
        if agent:  # extraction restating, with its own guesses
            fact_remember(key=key, value=value, importance=0.3, subjects=["x"], actor="agent")
        else:
            # Beside a live look-alike the owner gave (« Velo »): refused, in French.
            with contextlib.suppress(FactKeyLookAlike):
                fact_store(key=key, value=value, actor="user")
            self._refresh_owner(key)

    @rule(key=st.sampled_from(ALL_NAMES), importance=st.sampled_from([0.2, 0.5, 0.9]))
    def owner_edit(self, key, importance):
        from memory.services.facts import fact_update

        fact = Fact.objects.filter(key=key).first()
        if fact is not None and not fact.forgotten:
            fact_update(fact=fact, actor="user", importance=importance)
            self.owner_importance[fact.pk] = importance

    @rule(key=st.sampled_from(ALL_NAMES), to=st.integers(0, 2))
    def rename(self, key, to):
        """The owner renames a live fact's key, as the admin's form does (a key any fact
        holds is refused there; one that only looks like a live fact's, by the service)."""
        from memory.services.facts import fact_update

        names = next(names for names in NAMES.values() if key in names)
        new = names[to % len(names)]
        fact = Fact.objects.filter(key=key, forgotten=False).first()
        if fact is None or new == key or Fact.all_objects.filter(key=new).exists():
            return
        try:
            fact_update(fact=fact, actor=Actor.USER, key=new)
        except FactKeyLookAlike:
            return
        self.tick += 1
        self.renames.append((fact.pk, key, self.tick))
        self.owner_key[fact.pk] = new

    @rule(key=st.sampled_from(ALL_NAMES))
    def forget(self, key):
        from memory.services.facts import fact_forget

        fact = Fact.objects.filter(key=key).first()
        if fact is not None:
            if not fact.forgotten:
                self.owner_forgot.add(fact.pk)
            fact_forget(fact=fact, actor="user")

    @rule(key=st.sampled_from(ALL_NAMES))
    def restore(self, key):
        from memory.services.facts import fact_restore

        fact = Fact.objects.filter(key=key).first()
        for _, alone, _ in self.forgotten_topics:
            alone.discard(fact and fact.pk)  # the owner gives it back: not forgotten alone
        if fact is not None:
            fact_restore(fact=fact, actor="user")
            self.owner_forgot.discard(fact.pk)
            self._refresh_owner(key)

    @rule(data=st.data())
    def erase(self, data):
        """The owner erases a fact for good: live or forgotten, set aside or not."""
        from memory.services.erasing import fact_erase

        pks = list(Fact.objects.order_by("pk").values_list("pk", flat=True))
        if not pks:
            return
        pk = data.draw(st.sampled_from(pks))
        fact_erase(fact=Fact.all_objects.get(pk=pk), actor=Actor.USER)
        self.erased.add(pk)
        self.owner_forgot.discard(pk)
        for _, alone, _ in self.forgotten_topics:
            alone.discard(pk)

    @rule(key=st.sampled_from(ALL_NAMES))
    def expire(self, key):
        from memory.services.expiry import expired_purge

        Fact.objects.filter(key=key).update(expires_at=timezone.now() - timedelta(seconds=1))
        expired_purge()

    @rule(secret=st.booleans(), tool=st.sampled_from([None, "plain", "secret"]))
    def chat(self, secret, tool):
        """An exchange; an outside agent's may hold a tool result between question and reply."""
        from memory.services.messages import message_save

        text = f"Le voyage à {SECRET} est en août" if secret else "Le potager demande de l'eau"
        question = message_save(channel="whatsapp", role="user", content=text)
        if tool is not None:
            found = f"agenda : voyage à {SECRET}" if tool == "secret" else "agenda : vol AF 1234"
            message_save(channel="whatsapp", role="tool", source="tool", content=found)
        message_save(channel="whatsapp", role="assistant", content="Noté.", reply_to_id=question.id)

    @rule(agent=st.booleans())
    def store_trip(self, agent):
        """A fact about the topic, by the owner or restated by the agent."""
        from memory.services.dedup import fact_remember
        from memory.services.facts import fact_store

        value = TRIP_VALUE
        self.purged_facts.discard((TRIP, value))  # stated again: news, not a resurrection
        self._trip_stated_again()
        if agent:
            fact_remember(key=TRIP, value=value, actor="agent")
        else:
            # Beside the owner's live look-alike: refused, in French.
            with contextlib.suppress(FactKeyLookAlike):
                fact_store(key=TRIP, value=value, actor="user")

    @rule()
    def store_a_look_alike_of_the_trip(self):
        """The owner's key that only looks like the trip's (refused beside a live one)."""
        from memory.services.facts import fact_store

        with contextlib.suppress(FactKeyLookAlike):
            fact_store(key=TRIP.upper(), value="Voyage à Lisbonne en mai", actor="user")

    @rule()
    def forget_topic(self):
        from memory.services.forgetting import topic_forget

        alone = set(
            Fact.all_objects.filter(
                forgotten=True, forgetting__isnull=True, value__contains=SECRET
            ).values_list("pk", flat=True)
        )
        live = set(Fact.objects.filter(forgotten=False).values_list("pk", flat=True))
        result = topic_forget(topic=f"voyage {SECRET}", actor="user")
        if result.forgetting_id:
            taken = Fact.all_objects.filter(forgetting_id=result.forgetting_id)
            taken_live = set(taken.values_list("pk", flat=True)) & live
            self.owner_forgot |= taken_live
            self.forgotten_topics.append((result.forgetting_id, alone, taken_live))
        # Every row about the topic left, whatever path stored it (tool results inside an
        # exchange, a fact forgotten alone and still restorable).
        assert not Message.objects.filter(content__contains=SECRET).exists()
        assert not Fact.all_objects.filter(forgetting__isnull=True, value__contains=SECRET).exists()

    @precondition(lambda self: self.forgotten_topics)
    @rule()
    def undo_topic(self):
        from memory.services.forgetting import forgetting_restore

        forgetting_id, alone, taken_live = self.forgotten_topics.pop()
        forgetting_restore(forgetting_id=forgetting_id, actor="user")
        self.owner_forgot -= taken_live  # given back; what it held forgotten stays so
        # What the owner had forgotten alone before the topic comes back forgotten.
        assert all(Fact.all_objects.get(pk=pk).forgotten for pk in alone)

    @rule()
    def purge_topics(self):
        """The end of every undo window: what the forgets took is gone for good."""
        from memory.services.forgetting import forgettings_purge
        from memory.services.forgetting_restated import key_unaside

        taken = {"forgetting__isnull": False}
        self.purged_messages |= set(
            Message.all_objects.filter(**taken).values_list("content", "created_at")
        )
        # Stated again while the forget held it (the taken one set aside): news, which
        # the purge leaves, not a resurrection.
        stated_again = set(
            Fact.all_objects.filter(forgetting__isnull=True).values_list("key", "value")
        )
        self.purged_facts |= {
            (had, value)  # a key set aside while the forget held it, a key renamed since
            for pk, key, value in Fact.all_objects.filter(**taken).values_list("pk", "key", "value")
            for had in (key_unaside(key), *self._keys_left(pk))
        } - stated_again
        forgettings_purge(now=timezone.now() + timedelta(days=30))
        self.forgotten_topics.clear()
        self.tick += 1
        self.purged_at = self.tick

    @rule()
    def export(self):
        from memory.services.portability import export_lines

        self.exports.append(list(export_lines()))

    @precondition(lambda self: self.exports)
    @rule(data=st.data(), retyped=st.booleans())
    def import_an_older_export(self, data, retyped):
        """The owner imports a file exported earlier, maybe with its facts' keys and texts
        typed otherwise (edited by hand): nothing purged since comes back, nor anything
        still forgotten."""
        from memory.services.erased_marks import fact_alike
        from memory.services.portability_import import memory_import_lines

        def alike(rows):
            return {fact_alike(key, value) for key, value in rows}

        lines = data.draw(st.sampled_from(self.exports))
        keys = _fact_keys(lines)
        if retyped and len({key.upper() for key in keys}) == len(keys):
            lines = [_retyped(line) for line in lines]  # (a file of twin keys is refused)
        live = Fact.all_objects.filter(forgotten=False, forgetting__isnull=True)
        hidden = Fact.all_objects.exclude(pk__in=live.values("pk"))
        live_before = alike(live.values_list("key", "value"))
        hidden_before = alike(hidden.values_list("key", "value"))
        memory_import_lines(lines)
        back = set(Message.all_objects.values_list("content", "created_at")) & self.purged_messages
        assert not back, back
        facts = alike(Fact.all_objects.values_list("key", "value")) & alike(self.purged_facts)
        assert not facts, facts
        came_back = (alike(live.values_list("key", "value")) - live_before) & hidden_before
        assert not came_back, came_back

    @rule(about=st.sampled_from(tuple(NAMES)), which=st.integers(0, 1))
    def say(self, about, which):
        """The owner says something about a fact in a chat; its extraction may run late."""
        from memory.services.messages import message_save

        message = message_save(channel="whatsapp", role="user", content=STATED[about][which])
        live = Fact.objects.filter(forgotten=False).values_list("key", "pk")
        named = {fact_key_folded(name) for name in NAMES[about]}
        held = {
            key: pk
            for key, pk in live
            if fact_key_folded(key) in named and not FACT_ASIDE_KEY_PATTERN.search(key)
        }
        self.tick += 1
        self.said.append((message.id, about, self.tick, held))

    @precondition(lambda self: self.said)
    @rule(data=st.data(), which=st.integers(0, 1))
    def late_statement(self, data, which):
        """A late (retried) extraction of a message states its fact again: under a key
        the fact had when the message was written (renamed since, maybe) or another
        spelling of its names, in the message's words or others."""
        from memory.services.dedup import FactErased, fact_remember

        message_id, about, said_at, held = data.draw(st.sampled_from(self.said))
        key = data.draw(st.sampled_from((*held, *NAMES[about])))
        value = STATED[about][which]
        # The fact the key named when the message was written: the statement is about it.
        named = next(
            (pk for k, pk in held.items() if fact_key_folded(k) == fact_key_folded(key)), None
        )
        renamed_since = any(
            pk == named and fact_key_folded(left) == fact_key_folded(key) and at > said_at
            for pk, left, at in self.renames
        )
        fate = self._fate(named)
        before = dict(Fact.all_objects.values_list("pk", "version"))
        # The facts a later message gave their value (messages are numbered as written).
        newer = dict(
            Fact.all_objects.filter(source_message_id__gt=message_id).values_list("pk", "value")
        )
        # Refused: erased since its message, or its message was forgotten since (the
        # extraction drops it).
        with contextlib.suppress(FactErased, SourceForgotten):
            fact_remember(key=key, value=value, actor=Actor.AGENT, source_message_id=message_id)
        after = dict(Fact.all_objects.values_list("pk", "version"))
        new = set(after) - set(before)
        written = {pk for pk in after if pk in before and after[pk] != before[pk]}
        seen = (key, value, named, fate, sorted(new), sorted(written))
        # Extractions run in any order: a late one never replaces a later message's value.
        kept = dict(Fact.all_objects.filter(pk__in=newer).values_list("pk", "value"))
        assert kept == {pk: v for pk, v in newer.items() if pk in kept}, seen
        if fate in ("forgotten", "erased"):
            # The owner forgot or erased it after the message: it stays so, and the
            # statement is no news under the key it had (renamed since or not).
            assert not new, seen
            assert not Fact.all_objects.filter(
                pk=named, forgotten=False, forgetting__isnull=True
            ).exists(), seen
        elif fate == "live" and renamed_since:
            # About the fact the owner renamed since: there or nowhere, never a second one.
            assert not new, seen
            assert written <= {named}, seen
        if new and said_at > self.purged_at:
            stated = Fact.all_objects.filter(pk__in=new).values_list("key", "value")
            self.purged_facts -= set(stated)  # said after the purge: news
        if about == TRIP and (new or written):
            self._trip_stated_again()

    # --- workers ------------------------------------------------------------------------

    @precondition(lambda self: QUEUE)
    @rule(data=st.data(), again=st.booleans(), batched=st.booleans())
    def run_task(self, data, again, batched):
        """Any queued task, in any order; ``again`` leaves it queued (a duplicate delivery);
        ``batched``: as the Celery task runs it, with the other due rows of its kind."""
        index = data.draw(st.integers(0, len(QUEUE) - 1))
        kind, row_id = QUEUE[index] if again else QUEUE.pop(index)
        indexing.index_rows(kind, indexing.batch_fill(kind, [row_id]) if batched else [row_id])

    @precondition(lambda self: QUEUE)
    @rule(data=st.data())
    def lose_task(self, data):
        QUEUE.pop(data.draw(st.integers(0, len(QUEUE) - 1)))

    @precondition(lambda self: QUEUE)
    @rule(
        data=st.data(),
        meanwhile=st.sampled_from(["second_worker", "edit", "forget"]),
        then_index=st.booleans(),
    )
    def slow_worker(self, data, meanwhile, then_index):
        """A worker whose lease runs out while it embeds: something happens meanwhile
        (``then_index``: and another worker indexes the row before the slow one writes)."""
        kind, row_id = QUEUE.pop(data.draw(st.integers(0, len(QUEUE) - 1)))
        real_write, real_lease = indexing._write, index_claims.LEASE

        def write_late(documents, removals):
            indexing._write = real_write
            index_claims.LEASE = real_lease
            if meanwhile == "second_worker":
                indexing.index_rows(kind, [row_id])
            elif meanwhile == "edit" and kind == "fact":
                from memory.services.facts import fact_update

                fact = Fact.all_objects.filter(pk=row_id, forgotten=False).first()
                if fact is not None:
                    fact_update(fact=fact, actor="user", importance=0.7)
                    self.owner_importance[fact.pk] = 0.7
            elif meanwhile == "forget" and kind == "fact":
                from memory.services.facts import fact_forget

                fact = Fact.all_objects.filter(pk=row_id).first()
                if fact is not None:
                    if not fact.forgotten and fact.forgetting_id is None:
                        self.owner_forgot.add(fact.pk)
                    fact_forget(fact=fact, actor="user")
            if then_index and meanwhile != "second_worker":
                # The change's own task, delivered to another worker, runs now.
                while (kind, row_id) in QUEUE:
                    QUEUE.remove((kind, row_id))
                indexing.index_rows(kind, [row_id])
            return real_write(documents, removals)

        indexing._write = write_late
        index_claims.LEASE = timedelta(seconds=-1)  # this worker's lease is already over
        try:
            indexing.index_rows(kind, [row_id])
        finally:
            indexing._write, index_claims.LEASE = real_write, real_lease

    @rule()
    def reindex(self):
        from memory.services.maintenance import reindex

        reindex()

    @rule()
    def settle(self):
        """Quiescence: the sweep sends what is pending, every queued task runs."""
        for _ in range(10):
            indexing.pending_sweep(now=timezone.now() + timedelta(days=2))
            while QUEUE:
                kind, row_id = QUEUE.pop(0)
                indexing.index_rows(kind, [row_id])
            if not _pending():
                break
        self._check_agreement()

    # --- the promises ------------------------------------------------------------------------

    def _trip_stated_again(self):
        for _, alone, _ in self.forgotten_topics:
            # Stated again: news that may bring it back (the restatement rules).
            self.owner_forgot -= alone
            alone.clear()

    def _keys_left(self, pk):
        """The keys the owner renamed the fact ``pk`` from."""
        return {left for fact, left, _ in self.renames if fact == pk}

    def _fate(self, pk):
        """What became of the fact ``pk`` for the model: erased, forgotten by the owner
        (kept so, or purged), live, or something else (None: expired, say)."""
        if pk is None:
            return None
        if pk in self.erased:
            return "erased"
        if pk in self.owner_forgot:
            return "forgotten"
        if Fact.all_objects.filter(pk=pk, forgotten=False, forgetting__isnull=True).exists():
            return "live"
        return None

    def _refresh_owner(self, key):
        fact = Fact.objects.filter(key=key).first()
        if fact is not None and "importance" in (fact.owner_fields or []):
            self.owner_importance[fact.pk] = fact.importance

    @invariant()
    def nothing_forgotten_is_reachable(self):
        from memory.services.search import memory_search

        STATS["steps"] += 1
        hits = memory_search(query=f"voyage {SECRET}", mode="text")
        hits += memory_search(query=f"voyage {SECRET} en août", mode="semantic", limit=20)
        reachable = " ".join(h.excerpt for h in hits)
        topic_live = (
            Message.objects.filter(content__contains=SECRET).exists()
            or Fact.objects.filter(forgotten=False, value__contains=SECRET).exists()
        )
        assert topic_live or SECRET not in reachable
        forgotten = set(Fact.all_objects.filter(forgotten=True).values_list("pk", flat=True))
        assert not {int(h.id) for h in hits if h.kind == "fact"} & forgotten

    @invariant()
    def no_two_live_facts_look_alike(self):
        """One live fact per key as the agent's statements fold it (a fact set aside waits
        under a key of its own): two were both in the prompt (QA: a topic undo)."""
        from memory.models import FACT_ASIDE_KEY_PATTERN, FactKind, fact_key_folded

        keys = Fact.objects.filter(kind=FactKind.OWNER, forgotten=False).values_list(
            "key", flat=True
        )
        folded = [fact_key_folded(k) for k in keys if not FACT_ASIDE_KEY_PATTERN.search(k)]
        assert len(folded) == len(set(folded)), sorted(keys)

    @invariant()
    def no_owner_edit_is_lost(self):
        for pk, importance in self.owner_importance.items():
            fact = Fact.all_objects.filter(pk=pk).first()  # a purge may have ended it
            if fact is not None:
                assert fact.importance == importance, (fact.key, fact.importance, importance)

    @invariant()
    def no_owner_rename_is_lost(self):
        """A live fact keeps the key the owner gave it (shown set aside beside a live
        look-alike, after a restore)."""
        from memory.services.forgetting_restated import key_unaside

        live = Fact.all_objects.filter(
            pk__in=self.owner_key, forgotten=False, forgetting__isnull=True
        ).values_list("pk", "key")
        for pk, key in live:
            assert key_unaside(key) == self.owner_key[pk], (pk, key, self.owner_key[pk])

    @invariant()
    def what_the_owner_forgot_stays_forgotten(self):
        back = Fact.all_objects.filter(
            pk__in=self.owner_forgot, forgotten=False, forgetting__isnull=True
        ).values_list("pk", "key", "value")
        assert not back, list(back)

    def _check_agreement(self):
        from memory.services.index_documents import KINDS, desired, model_for

        assert not _pending(), _pending()
        for kind in KINDS:
            ids = list(model_for(kind).all_objects.values_list("id", flat=True))
            if kind == "message":
                ids = list(
                    Message.all_objects.filter(reply_to__isnull=True).values_list("id", flat=True)
                )
            documents, removals, _ = desired(kind, ids)
            for document in documents:
                row = model_for(kind).all_objects.get(pk=document.row_id)
                assert row.index_state == IndexState.INDEXED, (kind, row.pk, row.index_state)
                assert row.indexed_version == row.version
                [point] = self.store.retrieve(document.collection, [document.point_id])
                assert point.payload["version"] == row.version
                assert point.payload == document.payload
            for removal in removals:
                assert not self.store.retrieve(removal.collection, [removal.point_id]), removal


QUEUE: list[tuple[str, int]] = []


def _fact_keys(lines: list[str]) -> set[str]:
    """The fact keys of an export's lines."""
    import json

    return {json.loads(line)["key"] for line in lines if '"type":"fact"' in line}


def _retyped(line: str) -> str:
    """An export line whose fact's key and text are in capitals (an export edited by hand)."""
    import json

    record = json.loads(line)
    if record.get("type") != "fact" or "(" in record["key"]:
        return line  # a key set aside keeps its form (in capitals it would be its twin's)
    return json.dumps(record | {"key": record["key"].upper(), "value": record["value"].upper()})


def _pending() -> list:
    from memory.services.index_documents import KINDS, model_for

    return [
        (kind, pk)
        for kind in KINDS
        for pk in model_for(kind)
        .all_objects.filter(index_state=IndexState.PENDING)
        .values_list("id", flat=True)
    ]


@pytest.mark.django_db(transaction=True)
def test_the_memory_keeps_its_promises_under_any_order_of_events(
    vector_store, local_embedder, monkeypatch
):
    monkeypatch.setattr(
        index_queue, "_send", lambda kind, row_ids: QUEUE.extend((kind, r) for r in row_ids)
    )
    STATS.update(examples=0, steps=0)
    run_state_machine_as_test(
        MemoryMachine,
        settings=settings(PROFILE, suppress_health_check=list(HealthCheck)),
    )
    print(f"state machine: {STATS['examples']} examples, {STATS['steps']} steps")
