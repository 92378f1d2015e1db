"""A fact the owner creates keeps its type and importance against the agent, defaults included.

QA: the owner stored « ville » (identity, importance 1.0 by default) with a key and a value
only; an unrelated dedup lowered it to 0.6, then the agent's `memory__store_fact` with
importance 0.2 to 0.2, and MCP `remember` on another owner's fact answered « La vôtre n'a
pas été enregistrée » while it wrote importance 0.1. The creation's revision already
credited these defaults to the owner.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, MemoryType
from memory.services.facts import fact_store, fact_update

pytestmark = pytest.mark.django_db


def test_the_agent_cannot_lower_what_the_owner_created():
    fact, _ = fact_store(key="ville", value="Paul habite à Lyon", memory_type=MemoryType.IDENTITY)
    assert fact.importance == 1.0

    fact_store(key="ville", value="Paul habite à Lyon", importance=0.2, actor=Actor.AGENT)
    fact_update(fact=fact, actor=Actor.AGENT, importance=0.1, memory_type=MemoryType.PREFERENCE)

    fact.refresh_from_db()
    assert (fact.importance, fact.memory_type) == (1.0, MemoryType.IDENTITY)
    assert {"value", "memory_type", "importance"} <= set(fact.owner_fields)


def test_what_the_agent_created_it_still_weighs():
    fact, _ = fact_store(key="film", value="Aime les films de Kubrick", actor=Actor.AGENT)

    fact_store(key="film", value="Aime les films de Kubrick", importance=0.9, actor=Actor.AGENT)

    fact.refresh_from_db()
    assert fact.importance == 0.9 and fact.owner_fields == []


def test_the_agent_is_told_when_it_met_the_owners_importance(agent_api):
    fact_store(key="medecin", value="Le médecin traitant est le Dr Who")

    answer = agent_api.post(
        "/api/v1/memory/facts",
        {"key": "medecin", "value": "Le médecin traitant est le Dr Who", "importance": 0.1},
        format="json",
    )

    assert answer.status_code == 200, answer.content
    assert answer.json()["owner_kept"] is True
    assert answer.json()["importance"] != 0.1
