"""The keyword indexes' upkeep: segments merged, with every search answering as before."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import Fact, Message, Summary
from memory.services.maintenance import search_index_maintain
from memory.stores import fts_upkeep
from memory.stores.fts import (
    fts_rank_messages,
    fts_rank_summaries,
    fts_search_facts,
    query_terms,
)
from memory.stores.fts_upkeep import fts_integrity_check, fts_merge, fts_segments

# Committed one by one, as messages arrive: FTS5 writes each transaction as a segment.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _segments_kept():
    """FTS5 merges segments on its own as they pile up (automerge): off during a test, so
    that the committed writes leave several (up to its crisis merge, at 16), and back to its
    default (4) after. Each index starts merged: the earlier tests' writes (and the deletes
    that emptied their tables) leave segments behind, and where its crisis merges fall
    depends on them (after some orders of the suite's tests 40 commits left messages_fts 2
    segments)."""

    def automerge(value: int) -> None:
        with connection.cursor() as cursor:
            for table in fts_upkeep.KEYWORD_INDEXES:
                cursor.execute(
                    f"INSERT INTO {table}({table}, rank) VALUES ('automerge', %s)", [value]
                )

    with connection.cursor() as cursor:
        for table in fts_upkeep.KEYWORD_INDEXES:
            cursor.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    automerge(0)
    yield
    automerge(4)


WORDS = ["vélo", "réunion", "lundi", "dentiste", "portail", "ski", "jardin", "train"]


def _fill(n: int) -> None:
    for i in range(n):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 3 + 1) % len(WORDS)]
        Message.objects.create(channel="whatsapp", role="user", content=f"{a} et {b} numéro {i}")
        Fact.objects.create(key=f"note_{i}", value=f"le {b} du {a}")
        Summary.objects.create(channel="whatsapp", content=f"Résumé : {a}, puis {b} ({i})")


def _answers() -> list:
    """Every word's ranked messages, facts and summaries, with their scores."""
    answers = []
    for word in WORDS:
        terms = query_terms(word)
        answers.append([(h.message_id, round(h.score, 9)) for h in fts_rank_messages(terms)])
        answers.append([(h.fact_id, round(h.score, 9)) for h in fts_search_facts(terms)])
        answers.append([(h.summary_id, round(h.score, 9)) for h in fts_rank_summaries(terms)])
    return answers


def test_an_index_of_many_segments_is_merged_into_one_and_answers_the_same():
    _fill(40)
    before = {table: fts_segments(table) for table in fts_upkeep.KEYWORD_INDEXES}
    assert min(before.values()) > 2, before  # the writes left several segments
    answers = _answers()

    assert fts_merge(min_segments=2) == before
    assert {table: fts_segments(table) for table in before} == dict.fromkeys(before, 1)
    assert _answers() == answers  # the same rows, ranked and scored alike
    fts_integrity_check()
    assert fts_merge(min_segments=2) == {}  # one segment: nothing to do


def test_an_index_at_or_below_the_threshold_is_left_as_it_is():
    _fill(12)
    segments = {table: fts_segments(table) for table in fts_upkeep.KEYWORD_INDEXES}
    assert fts_merge(min_segments=max(segments.values())) == {}
    assert {table: fts_segments(table) for table in segments} == segments


def test_the_search_index_upkeep_merges_the_keyword_indexes(monkeypatch, vector_store):
    """serve's start and the periodic task (search_index_maintain) keep them merged."""
    monkeypatch.setattr(fts_upkeep, "FTS_MERGE_MIN_SEGMENTS", 2)
    _fill(40)
    assert fts_segments("messages_fts") > 2
    answers = _answers()
    search_index_maintain(quiet_s=0)
    assert fts_segments("messages_fts") == 1
    assert fts_segments("facts_fts") == 1
    assert _answers() == answers


def test_a_merge_sqlite_refuses_leaves_the_vectors_index_built(monkeypatch, vector_store, caplog):
    """The database locked past the busy timeout (or the disk full) while merging: the
    merge waits for the next upkeep, the vectors' index is still built, and `serve`,
    which runs the upkeep at start, still starts."""
    from django.db import OperationalError

    from memory.services import maintenance

    def locked(table: str) -> int:
        raise OperationalError("database is locked")

    monkeypatch.setattr(fts_upkeep, "fts_segments", locked)
    built: list[bool] = []
    monkeypatch.setattr(
        type(vector_store), "optimize", lambda self, **kw: built.append(True) or {"x": 1}
    )
    assert maintenance.search_index_maintain(quiet_s=0) == {"x": 1}
    assert built == [True]
    assert "keyword indexes not merged" in caplog.text
