"""memory_eval: dataset_store maps both eval ids of a fact restated under its key to the one
fact ("both of the set's ids name it"), but evaluate() inverts that mapping
(``to_eval = {memory_id: eval_id ...}``): the fact is read back as the LAST eval id only. A
question whose answer is the older memory (heldout5 q048: f-27, the mortgage restated by
f-43) can never be found, whatever the ranking; one naming both (q078) tops at 2/3."""

from __future__ import annotations

import pytest

from memory.services.evaluation import dataset_store, evaluate

pytestmark = pytest.mark.django_db


def test_a_question_answered_by_the_older_memory_of_a_restated_fact_is_found(tmp_path):
    fact = {"kind": "fact", "key": "shiv_phone", "type": "fact", "channel": "whatsapp"}
    data = {
        "now": "2027-04-01T12:00:00+02:00",
        "memories": [
            {
                **fact,
                "id": "f-1",
                "value": "Portable de Shiv : 06 71 28 44 90",
                "created_at": "2026-10-02T18:05:00+02:00",
            },
            {
                **fact,
                "id": "f-2",
                "value": "Nouveau portable de Shiv : 07 82 15 63 11",
                "created_at": "2027-03-06T13:25:00+01:00",
            },
        ],
        "questions": [
            {"id": "q1", "q": "le portable de Shiv ?", "channel": "whatsapp", "relevant": ["f-1"]},
        ],
    }
    ids = dataset_store(data, vault=tmp_path)
    assert ids["f-1"] == ids["f-2"]

    (score,) = evaluate(data, ids, modes=("text",))

    assert score.recall_at_10 == 1.0, score.misses
