"""The semantic source across languages: a hit known to be in the other language than the
question is held to `min_score` less the embedder's cross-language bonus, and stands that
much higher (its margin bonus) for the relevance gate (memory.services.language).

On a real embedded Qdrant, with vectors made so each hit's cosine is known: the bundled
e5 scores an answer across languages about 0.035 lower, and such an answer stood below
`min_score` (the blind sets' English questions about French memories: QA, heldout6).
"""

from __future__ import annotations

import math

import pytest

from memory.services.retrieval.semantic import semantic_found, semantic_ids
from memory.stores.vectors import CONVERSATIONS, VectorPoint, point_id
from tests.fakes.embedder import HashEmbedder, install

DIMENSION = 4
COSINE = 0.79  # below min_score 0.5's cosine (0.80) on the local scale, within the bonus


class CalibratedEmbedder(HashEmbedder):
    """The local model's scale and bonuses; every reference sentence orthogonal to the
    question (a background of 0), so a margin is the best hit's cosine."""

    name = "test:calibrated-cross-language"
    score_low = 0.74
    score_high = 0.86
    gate_margin = 0.075
    cross_language_bonus = 0.035
    cross_language_margin_bonus = 0.02

    def embed_documents(self, texts):
        return [[0.0, 0.0, 0.0, 1.0] for _ in texts]


def _at(cosine: float, axis: int) -> list[float]:
    """A unit vector at ``cosine`` from the question (the first axis)."""
    vector = [cosine, 0.0, 0.0, 0.0]
    vector[axis] = math.sqrt(1 - cosine**2)
    return vector


@pytest.fixture
def embedder(monkeypatch, vector_store):
    embedder = CalibratedEmbedder(dimension=DIMENSION)
    install(monkeypatch, embedder)
    vector_store.ensure_collection(CONVERSATIONS, DIMENSION)
    points = [  # (row, cosine, the language its payload records; None: indexed before)
        (1, COSINE, "fr"),
        (2, COSINE, "en"),
        (3, COSINE, None),
        (4, COSINE, ""),
        (5, 0.81, "en"),
    ]
    vector_store.upsert(
        CONVERSATIONS,
        [
            VectorPoint(
                point_id("message", row),
                _at(cosine, 1 + row % 2),
                {"message_id": row, "row_id": row, **({"lang": lang} if lang is not None else {})},
            )
            for row, cosine, lang in points
        ],
    )
    return embedder


def _found(embedder, query_language: str) -> tuple[list[str], float]:
    found = semantic_found(
        [1.0, 0.0, 0.0, 0.0], embedder, limit=10, min_score=0.5, query_language=query_language
    )
    return [item for item, _ in semantic_ids(found["hits"])], found["margin"]


def test_a_hit_in_the_other_language_gets_the_bonus_back(embedder):
    found, margin = _found(embedder, "en")

    # The English one above min_score, the French one within the bonus; the same cosine in
    # the question's language, or in a language unknown, stays below.
    assert found == ["message:5", "message:1"]
    assert margin == pytest.approx(0.81)  # 0.79 + 0.02 ties 0.81: the best either way


def test_the_margin_bonus_lifts_the_best_evidence_in_the_other_language(embedder):
    found, margin = _found(embedder, "fr")

    assert found == ["message:5", "message:2"]
    assert margin == pytest.approx(0.83)  # the English 0.81, its margin bonus added


def test_a_question_of_unknown_language_gets_no_bonus(embedder):
    found, margin = _found(embedder, "")

    assert found == ["message:5"]
    assert margin == pytest.approx(0.81)


def test_without_a_bonus_the_threshold_is_min_score_alone(embedder, monkeypatch):
    monkeypatch.setattr(CalibratedEmbedder, "cross_language_bonus", 0.0)
    monkeypatch.setattr(CalibratedEmbedder, "cross_language_margin_bonus", 0.0)

    assert _found(embedder, "en") == (["message:5"], pytest.approx(0.81))
