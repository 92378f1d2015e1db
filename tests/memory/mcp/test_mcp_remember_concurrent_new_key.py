"""Concurrent `remember` calls on one new key: exactly one of them created the fact.

QA (not deterministic): three concurrent calls on a new key answered « added » twice, for
one fact created and edited twice. Each call checks whether the key exists outside any
transaction (dedup's embedding and LLM call hold no lock), so all three can find it new;
the write that follows, under SQLite's write lock, is what tells who created it. Here a
barrier holds every call between that check and its write, so the race is certain.
"""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from memory.models import Actor, Fact, RevisionReason
from memory.services import dedup, index_queue

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 3
KEY = "marie_anniversaire"
VALUES = (
    "L'anniversaire de Marie est le 3 mai",
    "L'anniversaire de Marie est le 3 mai 1990",
    "Marie fête son anniversaire le 3 mai",
)


@pytest.fixture
def all_found_the_key_new(monkeypatch, settings):
    """Every call waits, the key's existence already checked (None), until all have: only
    then does any of them write."""
    settings.ANTHROPIC_API_KEY = ""  # dedup decides by its rule
    monkeypatch.setattr(index_queue, "_send", lambda kind, row_ids: None)  # no indexing
    barrier = threading.Barrier(CALLERS, timeout=30)

    def candidates_after_all_checked(**kwargs):
        barrier.wait()
        return []  # nothing similar yet: the statement is added

    monkeypatch.setattr(dedup, "fact_candidates", candidates_after_all_checked)


def test_concurrent_remembers_of_a_new_key_answer_added_once(mcp, all_found_the_key_new):
    answers: list[object] = [None] * CALLERS

    def call(index: int) -> None:
        try:
            result = mcp("remember", {"key": KEY, "value": VALUES[index]})
            assert not result.is_error, result.content[0].text
            answers[index] = json.loads(result.content[0].text)["action"]
        except Exception as exc:  # the test reports what the caller met
            answers[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert all(isinstance(answer, str) for answer in answers), answers
    assert sorted(answers) == ["added", "updated", "updated"], answers
    fact = Fact.objects.get(key=KEY)
    # The answers and the fact's history tell the same story.
    assert list(fact.revisions.order_by("id").values_list("actor", "reason")) == [
        (Actor.AGENT, RevisionReason.CREATED),
        (Actor.AGENT, RevisionReason.EDITED),
        (Actor.AGENT, RevisionReason.EDITED),
    ]
