"""The labelled evaluation set: valid, and hybrid retrieval beats both single modes on it."""

import pytest

from memory.services.evaluation import (
    DATASET_PATH,
    MODES,
    dataset_load,
    evaluation_run,
    scores_table,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_dataset_is_well_formed_and_big_enough():
    data = dataset_load(DATASET_PATH)
    ids = [m["id"] for m in data["memories"]]
    assert len(ids) == len(set(ids)) >= 150
    assert len(data["questions"]) >= 60
    assert len({m["channel"] for m in data["memories"] if m["kind"] == "exchange"}) >= 3
    for question in data["questions"]:
        # A negative (small talk, off-topic) has no relevant memory, by definition.
        negative = "negative" in question["tags"]
        assert bool(question["relevant"]) != negative, question["id"]
        assert set(question["relevant"]) <= set(ids), question["id"]
    tags = {t for q in data["questions"] for t in q["tags"]}
    assert {"paraphrase", "alias", "temporal", "keyword", "accents", "english", "update"} <= tags
    assert sum("negative" in q["tags"] for q in data["questions"]) >= 20


def test_hybrid_beats_semantic_and_text_on_recall_and_mrr(local_embedder):
    lines = []
    scores = {s.mode: s for s in evaluation_run(modes=MODES, out=lines.append)}
    hybrid = scores["hybrid"]
    for single in ("semantic", "text"):
        assert hybrid.recall_at_5 > scores[single].recall_at_5, lines
        assert hybrid.recall_at_10 > scores[single].recall_at_10, lines
        assert hybrid.mrr > scores[single].mrr, lines
    assert hybrid.questions >= 60
    # Small talk and off-topic questions mostly inject nothing.
    assert hybrid.negatives_silent >= 0.8 * hybrid.negatives, lines
    # What memory_eval prints for the owner is French.
    assert lines[0].split(";")[0].endswith("questions ") and "souvenirs" in lines[0], lines
    assert "n'injectent rien" in scores_table(list(scores.values()))
