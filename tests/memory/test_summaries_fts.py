"""The summaries' keyword index (summaries_fts): the keyword source finds a detail told in a
monthly summary and nowhere else, and the index follows every write of the summaries."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memory.models import Forgetting, Summary
from memory.stores.fts import fts_rank_summaries, query_terms
from memory.stores.fts_upkeep import fts_merge, fts_segments
from tests.stateful import stateful_settings

pytestmark = pytest.mark.django_db

MONTH = (
    "Résumé WhatsApp de mars. Le propriétaire a repris la course à pied le dimanche matin. "
    "Sa fille a commencé le judo au club de Fives. Le garagiste de la rue Solférino a changé "
    "les plaquettes de la Clio. Il a réservé un week-end à Bruges pour avril. Il cherche "
    "toujours un plombier pour la salle de bains."
)


def _summary_ids(words: list[str]) -> set[int]:
    return {hit.summary_id for hit in fts_rank_summaries(words, limit=100)}


def _integrity_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO summaries_fts(summaries_fts, rank) VALUES ('integrity-check', 1)"
        )


def test_a_detail_told_only_in_a_summary_is_found_by_its_words():
    """Before the index the keyword source ranked exchanges and facts only: the garage of
    « rue Solférino », one topic of five in March's summary, was found by meaning alone."""
    from memory.services.retrieval.sources import keyword_search

    summary = Summary.objects.create(channel="whatsapp", content=MONTH)
    Summary.objects.create(channel="whatsapp", content="Résumé de février : rien sur la voiture.")

    ranked = keyword_search("C'était quoi déjà le garage rue Solferino ?", limit=16)

    assert ranked[0][0] == f"summary:{summary.pk}"
    _integrity_check()


def test_the_keyword_source_interleaves_the_three_indexes_by_rank():
    """An exchange, a fact and a summary each first of their own index: all three are
    ranked, each index's first before any index's second."""
    from memory.models import Fact, Message
    from memory.services.retrieval.sources import keyword_search

    question = Message.objects.create(channel="whatsapp", role="user", content="Le judo de Léa ?")
    Message.objects.create(
        channel="whatsapp", role="assistant", content="Mardi.", reply_to=question
    )
    fact = Fact.objects.create(key="judo_lea", value="Léa fait du judo le mercredi")
    summary = Summary.objects.create(channel="whatsapp", content=MONTH)

    ranked = [item for item, _ in keyword_search("judo", limit=16)]

    assert ranked == [f"message:{question.pk}", f"fact:{fact.pk}", f"summary:{summary.pk}"]


def test_a_forgotten_or_deleted_summary_leaves_the_index_and_a_restored_one_comes_back():
    summary = Summary.objects.create(channel="whatsapp", content=MONTH)
    forgetting = Forgetting.objects.create(topic="garage", purge_after=timezone.now())

    Summary.all_objects.filter(pk=summary.pk).update(forgetting=forgetting)
    assert _summary_ids(["solferino"]) == set()
    Summary.all_objects.filter(pk=summary.pk).update(forgetting=None)
    assert _summary_ids(["solferino"]) == {summary.pk}
    Summary.all_objects.filter(pk=summary.pk).update(content="Résumé réécrit sans le garage.")
    assert _summary_ids(["solferino"]) == set()
    assert _summary_ids(["reecrit"]) == {summary.pk}
    Summary.all_objects.filter(pk=summary.pk).delete()
    assert _summary_ids(["reecrit"]) == set()
    _integrity_check()


def test_the_upkeep_merges_the_summaries_index_too():
    for i in range(12):
        with transaction.atomic():
            Summary.objects.create(channel="whatsapp", content=f"Résumé numéro {i} du mois")
    assert fts_segments("summaries_fts") > 1

    merged = fts_merge(min_segments=1)

    assert "summaries_fts" in merged
    assert fts_segments("summaries_fts") == 1
    _integrity_check()


WORDS = ["solferino", "plaquettes", "bruges", "plombier", "judo"]


class SummariesIndexMachine(RuleBasedStateMachine):
    """Summaries written, rewritten, forgotten, restored and deleted in any order."""

    def __init__(self) -> None:
        super().__init__()
        self.savepoint = transaction.savepoint()
        self.ids: list[int] = []

    def teardown(self) -> None:
        transaction.savepoint_rollback(self.savepoint)

    def _pick(self, index: int) -> int | None:
        return self.ids[index % len(self.ids)] if self.ids else None

    @rule(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    def create(self, words):
        self.ids.append(Summary.objects.create(channel="whatsapp", content=" ".join(words)).pk)

    @rule(index=st.integers(0, 20), words=st.lists(st.sampled_from(WORDS), max_size=3))
    def rewrite(self, index, words):
        if (pk := self._pick(index)) is not None:
            Summary.all_objects.filter(pk=pk).update(content="Réécrit " + " ".join(words))

    @rule(index=st.integers(0, 20), forget=st.booleans())
    def forgetting(self, index, forget):
        if (pk := self._pick(index)) is not None:
            target = (
                Forgetting.objects.create(topic="x", purge_after=timezone.now()) if forget else None
            )
            Summary.all_objects.filter(pk=pk).update(forgetting=target)

    @rule(index=st.integers(0, 20))
    def delete(self, index):
        if (pk := self._pick(index)) is not None:
            Summary.all_objects.filter(pk=pk).delete()
            self.ids.remove(pk)

    @invariant()
    def index_matches_the_rows(self):
        rows = Summary.all_objects.filter(pk__in=self.ids, forgetting__isnull=True)
        for word in WORDS:
            holding = {s.pk for s in rows if word in query_terms(s.content)}
            assert _summary_ids([word]) == holding
        _integrity_check()


def test_any_sequence_of_summary_writes_keeps_the_index_in_step():
    """After every write the keyword index finds exactly the summaries still in the memory
    that hold a word (a forgotten one never), and FTS5's own check passes."""
    run_state_machine_as_test(
        SummariesIndexMachine, settings=stateful_settings(examples=60, steps=20)
    )
