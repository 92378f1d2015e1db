"""Every evaluation set shipped in memory/eval loads, and every question can be scored.

A question naming a memory the set does not hold is never answered: it would count as a
miss of the retrieval, silently, in every mode (memory_eval scores relevant ids only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.services.evaluation import DATASET_PATH, dataset_load

SETS = sorted(DATASET_PATH.parent.glob("*.json"))


def test_the_sets_are_found():
    assert DATASET_PATH in SETS and len(SETS) >= 2


@pytest.mark.parametrize("path", SETS, ids=[path.stem for path in SETS])
def test_a_set_loads_and_every_question_names_memories_it_holds(path: Path):
    data = dataset_load(path)
    memory_ids = [memory["id"] for memory in data["memories"]]
    question_ids = [question["id"] for question in data["questions"]]

    assert len(set(memory_ids)) == len(memory_ids)
    assert len(set(question_ids)) == len(question_ids)
    held = set(memory_ids)
    unknown = {
        (question["id"], relevant)
        for question in data["questions"]
        for relevant in question["relevant"]
        if relevant not in held
    }
    assert not unknown
    assert all(question["q"].strip() for question in data["questions"])
    # Answerable questions to rank, and negatives to stay silent on.
    assert any(question["relevant"] for question in data["questions"])
    assert any(not question["relevant"] for question in data["questions"])
