"""An owner's /memory edit of a fact, then the digest of an observed room restating it: a
subject the owner took off is not put back (the agent only adds subjects the owner never removed)."""

from __future__ import annotations

import json

import pytest

import agent.extraction
from agent.digest import digest_run_now
from memory.models import Actor, Fact, FactRevision
from memory.services.digest import DIGEST_NOTE
from memory.services.facts import fact_store, fact_update
from memory.services.messages import message_save
from tests.dashboard.conftest import HTMX
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

ROOM = "lobby"


@pytest.fixture
def world(lobby):
    return lobby


def test_a_subject_the_owner_removed_on_memory_is_not_put_back_by_the_digest(
    world, staff_client, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    # 1. The agent learnt the fact, with its subjects.
    fact, _ = fact_store(
        key="voyage_david",
        value="David part en Grèce.",
        memory_type="event",
        subjects=["david", "grèce"],
        ttl="30d",
        actor=Actor.AGENT,
    )
    # 2. The owner corrects it on /memory: value, importance, subjects (drops "grèce"), no expiry.
    response = staff_client.post(
        "/memory/facts/voyage_david/edit/",
        {
            "value": "David part en Crète, pas en Grèce.",
            "memory_type": "event",
            "importance": "0.9",
            "subjects": "david, crète",
            "no_expiry": "on",
        },
        **HTMX,
    )
    assert response.status_code == 200, response.content.decode()[:500]
    owned = Fact.objects.get(pk=fact.pk)
    assert owned.subjects == ["david", "crète"] and owned.expires_at is None
    assert "subjects" in owned.owner_fields

    # 3. Later, an observed room repeats the old version; the digest restates it.
    with capture(execute=True):
        message_save(channel=ROOM, role="user", content="David part en Grèce demain", author="zoé")
    world.script(
        text_message(
            json.dumps(
                {
                    "facts": [
                        {
                            "key": "voyage_david",
                            "value": "David part en Grèce.",
                            "type": "event",
                            "importance": 0.3,
                            "subjects": ["david", "grèce"],
                            "ttl": "30d",
                            "sources": [1],
                        }
                    ]
                }
            )
        )
    )
    with capture(execute=True):
        outcome, digest = digest_run_now()
    assert outcome == "done", digest

    after = Fact.objects.get(pk=fact.pk)
    assert after.value == "David part en Crète, pas en Grèce."
    assert after.importance == 0.9
    assert after.expires_at is None
    # The owner removed "grèce" from the subjects: the agent's restatement must not put it back.
    assert after.subjects == ["david", "crète"], after.subjects


def test_an_owner_edit_made_while_the_digest_stores_keeps_its_own_empty_note(
    world, django_capture_on_commit_callbacks, monkeypatch
):
    """QA 8b: the digest tagged every revision written since its store started, the owner's
    edit made meanwhile too (no lock is held while dedup runs): only its own are tagged."""
    capture = django_capture_on_commit_callbacks
    fact, _ = fact_store(key="voyage_david", value="David part en Grèce.", actor=Actor.AGENT)
    with capture(execute=True):
        message_save(channel=ROOM, role="user", content="Je pars en Grèce en juin", author="david")
    world.script(
        text_message(
            json.dumps(
                {
                    "facts": [
                        {
                            "key": "voyage_david",
                            "value": "David part en Grèce en juin.",
                            "type": "event",
                            "sources": [1],
                        }
                    ]
                }
            )
        )
    )
    real = agent.extraction.fact_candidate_store

    def owner_edits_meanwhile(*args, **kwargs):
        fact_update(fact=Fact.objects.get(pk=fact.pk), actor=Actor.USER, importance=0.95)
        return real(*args, **kwargs)

    monkeypatch.setattr(agent.extraction, "fact_candidate_store", owner_edits_meanwhile)
    with capture(execute=True):
        outcome, _ = digest_run_now()
    assert outcome == "done"

    notes = dict(FactRevision.objects.filter(fact_id=fact.pk).values_list("actor", "note"))
    assert notes[Actor.USER] == ""
    prefix = DIGEST_NOTE.split("{")[0]
    digest_notes = FactRevision.objects.filter(fact_id=fact.pk, note__startswith=prefix)
    assert digest_notes.exists() and not digest_notes.filter(actor=Actor.USER).exists()
