"""Full-text search over messages: kept in sync by triggers, any text is a safe query."""

from __future__ import annotations

import unicodedata

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memory.models import Forgetting, Message
from memory.stores.fts import fts_rank_messages, fts_search, query_terms
from memory.stores.fts_upkeep import fts_integrity_check
from tests.stateful import stateful_settings

pytestmark = pytest.mark.django_db


def _say(content: str, channel: str = "whatsapp") -> Message:
    return Message.objects.create(channel=channel, role="user", content=content)


def _ids(hits) -> list[int]:
    return [hit.message_id for hit in hits]


def test_a_new_message_is_found_at_once():
    message = _say("Mickael s'est cassé l'épaule au ski")
    assert _ids(fts_search("ski")) == [message.id]
    fts_integrity_check()


def test_an_edited_message_is_found_by_its_new_words_only():
    message = _say("rendez-vous chez le dentiste")
    message.content = "rendez-vous chez le kiné"
    message.save()
    assert fts_search("dentiste") == []
    assert _ids(fts_search("kiné")) == [message.id]
    fts_integrity_check()


def test_a_deleted_message_leaves_the_index():
    message = _say("le code du portail est 4821")
    message.delete()
    assert fts_search("4821") == []
    fts_integrity_check()


def test_integrity_check_fails_when_the_index_is_out_of_step():
    """The check really compares: an index entry without its row is caught."""
    _say("alpha")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO messages_fts(rowid, content) VALUES (999999, 'fantome')")
    with pytest.raises(Exception, match=r"malformed|corrupt"):
        fts_integrity_check()


def test_accents_are_folded_both_ways():
    with_accent = _say("J'ai mal à l'épaule")
    without = _say("epaule droite")
    assert set(_ids(fts_search("epaule"))) == {with_accent.id, without.id}
    assert set(_ids(fts_search("ÉPAULE"))) == {with_accent.id, without.id}


def test_ligatures_are_folded_both_ways():
    oeuvre = _say("Une belle œuvre au musée")
    assert _ids(fts_search("oeuvre")) == [oeuvre.id]
    assert _ids(fts_search("Œuvre")) == [oeuvre.id]


def test_results_are_ranked_by_bm25():
    once = _say("Le vélo est dans le garage, avec les outils et les cartons de livres")
    twice = _say("vélo vélo")
    assert _ids(fts_search("vélo")) == [twice.id, once.id]
    scores = [hit.score for hit in fts_search("vélo")]
    assert scores == sorted(scores, reverse=True)


def test_all_words_must_match_unless_any_term_is_asked():
    both = _say("réunion budget lundi")
    one = _say("réunion équipe")
    assert _ids(fts_search("réunion budget")) == [both.id]
    assert set(_ids(fts_search("réunion budget", any_term=True))) == {both.id, one.id}


def test_the_channel_filter_keeps_one_channel():
    _say("piscine mardi", channel="whatsapp")
    dashboard = _say("piscine jeudi", channel="mission_control")
    assert _ids(fts_search("piscine", channel="mission_control")) == [dashboard.id]


def test_a_hit_carries_its_message_as_stored():
    message = _say("Le code du portail est 4821, ne pas le donner")
    [hit] = fts_search("portail")
    assert (hit.message_id, hit.content, hit.channel, hit.role) == (
        message.id,
        message.content,
        "whatsapp",
        "user",
    )
    assert hit.created_at == message.created_at and hit.score > 0


def test_an_empty_or_wordless_query_returns_nothing():
    _say("quelque chose")
    assert fts_search("") == []
    assert fts_search("   ") == []
    assert fts_search('"()*-^:') == []


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "a) OR (b",
        "NEAR(a b)",
        "AND",
        "OR OR NOT",
        "content:secret",
        "-exclude",
        "^start",
        "prefix*",
        "{col1 col2}: x",
        "🤖🔥",
        "l'épaule — vraiment ? « oui »",
        "x" * 10_000,
        "mot " * 2_500,
        "\x00\x01 control",
    ],
)
def test_hostile_queries_are_plain_text(query):
    _say("NEAR AND OR NOT content secret exclude start prefix 🤖")
    hits = fts_search(query)
    assert isinstance(hits, list)


def test_operators_in_the_query_are_searched_as_words():
    near = _say("le magasin NEAR la gare")
    _say("le magasin de la gare")
    assert _ids(fts_search("NEAR")) == [near.id]


# --- Property: any text is a valid query, and results match a plain search ----

VOCABULARY = [
    "épaule",
    "epaule",
    "Café",
    "cafe",
    "Mickael",
    "ski",
    "œuvre",
    "oeuvre",
    "réunion",
    "4821",
    "vélo",
    "garçon",
]
NOISE = st.sampled_from(
    ['"', "(", ")", "*", "-", "^", ":", " AND ", " OR ", " NOT ", " NEAR ", "🤖", ",", " ", "'"]
)


def _fold(text: str) -> str:
    text = text.replace("œ", "oe").replace("Œ", "OE").replace("æ", "ae").replace("Æ", "AE")
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def _plain_search(corpus: dict[int, str], query: str) -> set[int]:
    words = query_terms(query)
    if not words:
        return set()
    return {
        message_id
        for message_id, content in corpus.items()
        if all(word in query_terms(content) for word in words)
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    documents=st.lists(
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=5), min_size=1, max_size=8
    ),
    query_parts=st.lists(st.one_of(st.sampled_from(VOCABULARY), NOISE), max_size=6),
)
def test_any_text_is_a_valid_query_and_matches_a_plain_search(documents, query_parts):
    Message.objects.all().delete()
    corpus = {_say(" ".join(words)).id: " ".join(words) for words in documents}
    query = "".join(query_parts)
    found = set(_ids(fts_search(query, limit=100)))
    assert found == _plain_search(corpus, query)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=200))
def test_arbitrary_unicode_never_raises(query):
    hits = fts_search(query)
    assert isinstance(hits, list)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=80) | st.text(alphabet="aeéèêëàçœæÆŒ\u0301\u0327 ABCĳﬁ", max_size=40))
def test_fold_is_the_plain_decompose_and_strip_whatever_the_text(text):
    """fold's ASCII fast path and its translate table change nothing of what it returns."""
    from memory.stores.fts import fold

    assert fold(text) == _fold(text)


def test_query_terms_fold_like_the_index():
    assert query_terms("L'ÉPAULE, l'épaule et l'Œuvre") == ["l", "epaule", "et", "oeuvre"]
    assert _fold("Œuvre") == "oeuvre"


def test_facts_are_searchable_by_key_words_and_value_and_follow_edits():
    from memory.services.facts import fact_forget, fact_store, fact_update
    from memory.stores.fts import fts_search_facts

    fact, _ = fact_store(key="portail_code", value="Le code est 4821")
    assert [h.fact_id for h in fts_search_facts(query_terms("portail"))] == [fact.id]
    fact_update(fact=fact, actor="user", value="Le code est 9999")
    assert fts_search_facts(query_terms("4821")) == []
    assert [h.fact_id for h in fts_search_facts(query_terms("9999"))] == [fact.id]
    fact_forget(fact=fact, actor="user")  # a soft delete: the row stays, readers filter it
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO facts_fts(facts_fts, rank) VALUES ('integrity-check', 1)")


# --- The OR query's budget: its most frequent words are left out past it ----------------


def test_an_or_query_past_its_budget_counts_its_most_frequent_words_only_in_pairs():
    """Document counts come from the index; under the budget it is the plain OR; past
    it the most frequent words must meet two by two; a lone frequent word is left out
    unless no other word is in the index."""
    from memory.stores import fts_rank

    for i in range(6):
        _say(f"Mickael arrose les tomates du potager, jour {i}")
    _say("Mickael a vu le kiné pour son épaule")
    terms = query_terms("Mickael tomates épaule inconnu")
    within = fts_rank.or_expression_within_budget

    assert (
        within("messages_fts", terms, budget=100)
        == '"mickael" OR "tomates" OR "epaule" OR "inconnu"'
    )
    # mickael 7 + tomates 6 + epaule 1 = 14 rows; without mickael, 7.
    assert within("messages_fts", terms, budget=10) == '"tomates" OR "epaule" OR "inconnu"'
    assert within("messages_fts", terms, budget=1) == (
        '"epaule" OR "inconnu" OR ("mickael" AND "tomates")'
    )
    assert within("messages_fts", ["mickael", "inconnu"], budget=1) == '"inconnu" OR "mickael"'
    assert within("messages_fts", ["mickael"], budget=0) == '"mickael"'


def test_the_budget_of_a_column_query_counts_the_words_of_that_column_only():
    """The keyword source matches the exchanges' column: a word a busy room repeats is
    not frequent among the exchanges, so it is not paired away from them."""
    from memory.stores import fts_rank

    for _ in range(8):
        Message.objects.create(channel="lobby", role="user", content="tomates", observed=True)
    _say("Mickael arrose les tomates du potager")
    terms = query_terms("tomates potager")

    assert fts_rank.or_expression_within_budget("messages_fts", terms, budget=3) == '"potager"'
    assert (
        fts_rank.or_expression_within_budget("messages_fts", terms, budget=3, column="content")
        == '"tomates" OR "potager"'
    )


def test_the_bounded_or_query_ranks_fewer_rows_with_the_same_scores(monkeypatch):
    """The keyword source and text search rank fewer rows: the rare word's row and the
    rows where two frequent words meet, scored as in the plain OR; a row with one
    frequent word alone is not ranked. Forgetting's candidates are not bounded."""
    from memory.stores import fts, fts_rank

    lone = [_say(f"Mickael arrose le jardin, jour {i}") for i in range(6)]
    both = [_say(f"Mickael arrose les tomates, jour {i}") for i in range(3)]
    rare = _say("Mickael a vu le kiné pour son épaule")
    terms = query_terms("Mickael tomates épaule")
    plain = {h.message_id: h.score for h in fts.fts_rank_messages(terms, limit=50, bounded=False)}
    monkeypatch.setattr(fts_rank, "OR_MATCH_BUDGET", 3)
    bounded = fts.fts_rank_messages(terms, limit=50)

    assert {h.message_id for h in bounded} == {rare.id, *(m.id for m in both)}
    for hit in bounded:
        assert hit.score == pytest.approx(plain[hit.message_id])
    assert set(_ids(fts_search("Mickael tomates épaule", any_term=True))) == {
        rare.id,
        *(m.id for m in both),
    }
    unbounded = fts_search("Mickael tomates épaule", any_term=True, bounded=False, limit=50)
    assert set(_ids(unbounded)) == {rare.id, *(m.id for m in both + lone)}


def test_a_bounded_query_ranks_its_newest_matches_and_every_row_of_an_uncommon_word(
    monkeypatch,
):
    """bm25 costs about a microsecond a row: words that meet in thousands of rows ("réunion"
    and "lundi") cost tens of ms however the words are chosen. A bounded query ranks its
    newest RANK_WINDOW matches only, plus every row holding one of its uncommon words
    (in RANK_WINDOW rows or fewer), each scored as in the plain OR. Unbounded queries
    (forgetting) still rank every match."""
    from memory.stores import fts, fts_rank

    old_rare = _say("Réunion du lundi avec le notaire")  # the only "notaire": always ranked
    old = [_say(f"Réunion du lundi, point {i}") for i in range(4)]
    new = [_say(f"Réunion du lundi, suite {i}") for i in range(3)]
    terms = query_terms("réunion lundi notaire")
    plain = {h.message_id: h.score for h in fts.fts_rank_messages(terms, limit=50, bounded=False)}
    assert set(plain) == {old_rare.id, *(m.id for m in old + new)}
    monkeypatch.setattr(fts_rank, "RANK_WINDOW", 3)

    bounded = fts.fts_rank_messages(terms, limit=50)

    assert {h.message_id for h in bounded} == {old_rare.id, *(m.id for m in new)}
    for hit in bounded:
        assert hit.score == pytest.approx(plain[hit.message_id])
    for channel in (None, "whatsapp"):  # text search's own filters narrow the window's matches
        found = fts_search("réunion lundi notaire", any_term=True, channel=channel, limit=50)
        assert set(_ids(found)) == {old_rare.id, *(m.id for m in new)}
    unbounded = fts_search("réunion lundi notaire", any_term=True, bounded=False, limit=50)
    assert set(_ids(unbounded)) == set(plain)
    # Within the window, nothing changes.
    monkeypatch.setattr(fts_rank, "RANK_WINDOW", 8)
    assert {h.message_id for h in fts.fts_rank_messages(terms, limit=50)} == set(plain)


def test_a_bounded_fact_query_ranks_its_newest_facts_and_every_fact_of_an_uncommon_word(
    monkeypatch,
):
    from memory.models import Fact
    from memory.stores import fts, fts_rank

    Fact.objects.create(key="projet.rdv", value="Rendez-vous chez le notaire pour la maison")
    old = [Fact.objects.create(key=f"projet.a{i}", value=f"La maison, étape {i}") for i in range(4)]
    new = [Fact.objects.create(key=f"projet.b{i}", value=f"La maison, suite {i}") for i in range(2)]
    terms = query_terms("maison notaire")
    plain = {h.fact_id: h.score for h in fts.fts_search_facts(terms, limit=50, bounded=False)}
    assert len(plain) == 7
    monkeypatch.setattr(fts_rank, "RANK_WINDOW", 2)

    bounded = fts.fts_search_facts(terms, limit=50)

    rare = next(fid for fid in plain if fid not in {f.id for f in old + new})
    assert {h.fact_id for h in bounded} == {rare, *(f.id for f in new)}
    for hit in bounded:
        assert hit.score == pytest.approx(plain[hit.fact_id])


def test_a_statement_past_its_deadline_is_interrupted():
    """The keyword and T1 sources' real timeout: SQLite stops the statement itself."""
    import time

    from django.db import OperationalError

    from memory.stores.fts import sql_deadline

    started = time.monotonic()
    with pytest.raises(OperationalError, match="interrupted"):
        with sql_deadline(0.05), connection.cursor() as cursor:
            cursor.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                "SELECT count(*) FROM n"
            )
    assert time.monotonic() - started < 2
    with connection.cursor() as cursor:  # the handler is gone: the connection works on
        cursor.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
            "WHERE i < 300000) SELECT count(*) FROM n"
        )
        assert cursor.fetchone()[0] == 300000


def test_a_busy_observed_room_does_not_crowd_the_owners_exchanges_out_of_the_keyword_source():
    """The keyword source ranks the owner's exchanges only. Observed-room messages were
    ranked with them and dropped after the cut: twenty short room messages saying "vélo"
    took every one of the 16 places and the exchange about the bike was never found by
    its words. Text search (and forgetting) still find the room's messages."""
    from memory.services.retrieval.sources import keyword_search

    exchange = _say("Le vélo de route est au garage pour un pneu crevé")
    Message.objects.create(
        channel="whatsapp", role="assistant", content="C'est noté.", reply_to=exchange
    )
    room = [
        Message.objects.create(channel="lobby", role="user", content="vélo", observed=True)
        for _ in range(20)
    ]

    ranked = keyword_search("Où est mon vélo ?", limit=16)

    assert ranked[0][0] == f"message:{exchange.id}"
    assert not {f"message:{m.id}" for m in room} & {item for item, _ in ranked}
    found = set(_ids(fts_search("vélo", limit=50)))
    assert {m.id for m in room} | {exchange.id} <= found
    fts_integrity_check()


def test_a_message_moves_between_the_room_and_exchange_columns_with_its_flag():
    """The triggers keep the two columns in step: a room message is found by text search
    only, by the keyword source once it is an exchange again, and by nothing once deleted."""
    message = Message.objects.create(
        channel="lobby", role="user", content="La Grèce en juin", observed=True
    )
    assert fts_rank_messages(["grece"]) == [] and _ids(fts_search("grèce")) == [message.id]
    fts_integrity_check()
    Message.objects.filter(pk=message.pk).update(observed=None)
    assert [h.message_id for h in fts_rank_messages(["grece"])] == [message.id]
    fts_integrity_check()
    Message.objects.filter(pk=message.pk).update(observed=True, content="Le Portugal en juin")
    assert fts_rank_messages(["portugal"]) == [] and _ids(fts_search("portugal")) == [message.id]
    assert fts_search("grèce") == []
    fts_integrity_check()
    message.delete()
    assert fts_search("portugal") == []
    fts_integrity_check()


INDEX_WORDS = ["velo", "garage", "grece", "kine"]


class MessagesIndexMachine(RuleBasedStateMachine):
    """Message writes in any order: create (an exchange or a room's message), edit,
    flag or unflag as a room's, exclude, forget or restore, delete."""

    def __init__(self) -> None:
        super().__init__()
        self.savepoint = transaction.savepoint()
        self.ids: list[int] = []

    def teardown(self) -> None:
        transaction.savepoint_rollback(self.savepoint)

    def _pick(self, index: int) -> int | None:
        return self.ids[index % len(self.ids)] if self.ids else None

    @rule(word=st.sampled_from(INDEX_WORDS), observed=st.booleans())
    def create(self, word, observed):
        message = Message.objects.create(
            channel="lobby" if observed else "whatsapp",
            role="user",
            content=f"Il parle de {word}",
            observed=True if observed else None,
        )
        self.ids.append(message.id)

    @rule(index=st.integers(0, 20), word=st.sampled_from(INDEX_WORDS))
    def edit(self, index, word):
        if (pk := self._pick(index)) is not None:
            Message.objects.filter(pk=pk).update(content=f"Maintenant {word}")

    @rule(index=st.integers(0, 20), observed=st.booleans())
    def flag(self, index, observed):
        if (pk := self._pick(index)) is not None:
            Message.objects.filter(pk=pk).update(observed=True if observed else None)

    @rule(index=st.integers(0, 20), excluded=st.booleans())
    def exclude(self, index, excluded):
        if (pk := self._pick(index)) is not None:
            Message.objects.filter(pk=pk).update(memory_excluded=excluded)

    @rule(index=st.integers(0, 20), forget=st.booleans())
    def forgetting(self, index, forget):
        if (pk := self._pick(index)) is not None:
            target = (
                Forgetting.objects.create(topic="x", purge_after=timezone.now()) if forget else None
            )
            Message.all_objects.filter(pk=pk).update(forgetting=target)

    @rule(index=st.integers(0, 20))
    def delete(self, index):
        if (pk := self._pick(index)) is not None:
            Message.all_objects.filter(pk=pk).delete()
            self.ids.remove(pk)

    @invariant()
    def index_matches_the_rows(self):
        rows = Message.all_objects.filter(
            pk__in=self.ids, forgetting__isnull=True, memory_excluded=False
        ).values_list("id", "content", "observed")
        for word in INDEX_WORDS:
            holding = {pk for pk, content, _ in rows if word in query_terms(content)}
            exchanges = {pk for pk, content, observed in rows if observed is not True} & holding
            assert set(_ids(fts_search(word, limit=100))) == holding
            assert {h.message_id for h in fts_rank_messages([word], limit=100)} == exchanges
        fts_integrity_check()


def test_any_sequence_of_message_writes_keeps_both_columns_of_the_index_in_step():
    """After every write, text search finds exactly the visible rows holding a word, the
    keyword source exactly the visible exchanges (never a room's message), and FTS5's
    own check passes. Red when the triggers do not watch the room flag, and when the
    keyword source matches both columns."""
    run_state_machine_as_test(
        MessagesIndexMachine, settings=stateful_settings(examples=80, steps=20)
    )
