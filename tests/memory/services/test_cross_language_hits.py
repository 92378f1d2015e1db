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


# The observed rooms (retrieval.live) hold their hits to the same rule: an extract in the
# other language than the question gets the bonus back against `min_score`, and its
# margin bonus against the live gate (clear of the query's background, or a shared word).


@pytest.fixture
def live_points(embedder, vector_store):
    from memory.stores.vectors import LIVE

    vector_store.ensure_collection(LIVE, DIMENSION)
    points = [  # (row, cosine, the extract, its recorded language; None: indexed before)
        (11, COSINE, "Je pars demain pour Lisbonne avec les enfants", "fr"),
        (12, COSINE, "I am leaving for Lisbon tomorrow with the kids", "en"),
        (13, COSINE, "Je pars demain pour Lisbonne avec les enfants", None),
    ]
    vector_store.upsert(
        LIVE,
        [
            VectorPoint(
                point_id("message", row),
                _at(cosine, 1 + row % 2),
                {
                    "message_id": row,
                    "row_id": row,
                    "room": "famille",
                    "author": "eve",
                    "content": content,
                    **({"lang": lang} if lang is not None else {}),
                },
            )
            for row, cosine, content, lang in points
        ],
    )
    return embedder


def _live_found(embedder, query_language: str, background: float = 0.0) -> list[int]:
    from concurrent.futures import Future
    from unittest import mock

    from memory.services.retrieval.live import live_search

    ready: Future = Future()
    ready.set_result(([1.0, 0.0, 0.0, 0.0], embedder))
    with mock.patch("memory.services.relevance.query_background", return_value=background):
        found = live_search(
            ready,
            query_words=set(),
            query_language=query_language,
            exclude_room="whatsapp",
            limit=10,
            min_score=0.5,
            wait_s=1,
        )
    return sorted(message_id for message_id, _ in found["hits"])


def test_a_live_extract_in_the_other_language_gets_the_bonus_back(live_points):
    # The French extracts (the one indexed before its language was recorded is read from
    # its content) within the bonus; the English one at the same cosine stays below.
    assert _live_found(live_points, "en") == [11, 13]
    assert _live_found(live_points, "fr") == [12]
    assert _live_found(live_points, "") == []


def test_the_live_gate_gives_the_margin_bonus_to_the_other_language(live_points):
    # 0.79 stands 0.065 above a background of 0.725: below the gate's 0.075 alone, above
    # it with the 0.02 margin bonus. No word shared with the question.
    assert _live_found(live_points, "en", background=0.725) == [11, 13]
    assert _live_found(live_points, "en", background=0.74) == []
