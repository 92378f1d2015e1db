"""Text search for "C++" or "C#": to FTS5 the word is its letter alone, the "c" of every
"c'est"; the search requires it as written (case aside)."""

from __future__ import annotations

import pytest

from memory.models import Message
from memory.services.facts import fact_store
from memory.services.search import memory_search

pytestmark = pytest.mark.django_db


def _say(content: str) -> Message:
    return Message.objects.create(channel="whatsapp", role="user", content=content)


@pytest.fixture
def chatter():
    """Twelve "C'est …" messages, newer than anything a test says next (bm25 ties: newest first)."""
    for i in range(12):
        _say(f"C'est noté {i}")


def test_text_search_for_cpp_finds_the_cpp_message_and_no_cest(chatter):
    cpp = _say("J'apprends le C++ depuis lundi")
    for i in range(12):
        _say(f"C'est noté, encore {i}")
    hits = memory_search(query="C++", mode="text")
    assert [(h.kind, h.id) for h in hits] == [("message", str(cpp.id))]


def test_text_search_for_c_sharp_finds_the_fact_and_the_message_not_the_cest(chatter):
    fact = fact_store(key="langage_travail", value="Au travail, Mickael code en C#.")[0]
    fact_store(key="citation", value="C'est la vie, disait sa grand-mère.")
    message = _say("Le projet en c# compile enfin")
    hits = memory_search(query="C#", mode="text")
    assert {(h.kind, h.id) for h in hits} == {("fact", str(fact.pk)), ("message", str(message.id))}


def test_text_search_with_a_symbol_word_and_other_words_needs_both(chatter):
    both = _say("Les templates du C++ sont difficiles")
    _say("Les templates Word de la mairie")
    _say("J'ai lu un livre sur le C++")
    hits = memory_search(query="C++ templates", mode="text")
    assert [h.id for h in hits] == [str(both.id)]


def test_a_plain_letter_and_an_apostrophe_are_no_literal():
    from memory.stores.fts import literal_words

    assert literal_words("C++ ou C#, F# et encore c++ ; C'est l'école, abc++, x+y") == [
        "c++",
        "c#",
        "f#",
    ]
    assert literal_words("qu'est-ce que c'est ?") == []


def test_fts_search_literals_keep_only_the_rows_holding_them(chatter):
    from memory.stores.fts import fts_search

    cpp = _say("Retour au C++ après dix ans")
    hits = fts_search("", terms=["c"], literals=["c++"], limit=5)
    assert [hit.message_id for hit in hits] == [cpp.id]
