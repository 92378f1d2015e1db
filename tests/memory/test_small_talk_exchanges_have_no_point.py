"""An exchange of small talk on both sides has no point: it would be close to every query.

QA: « Qui est mon médecin ? » injected « Utilisateur : merci — Assistant : D'accord. » from
another channel (score 0.64): small talk's embedding is close to everything (relevance.py),
and such an exchange was indexed like any other. A small-talk message answered with
something (« ok » → « Ton rendez-vous est à 15 h ») keeps its point.
"""

from __future__ import annotations

import pytest

from memory.services.indexing import KIND_MESSAGE
from memory.services.maintenance import memory_doctor
from memory.services.retrieval import auto_retrieve
from memory.stores.vectors import CONVERSATIONS, point_id
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder):
    thanks, _ = exchange_save("wa2", "merci", "D'accord.")
    answered, _ = exchange_save("wa2", "ok", "Ton rendez-vous chez le dentiste est à 15 h.")
    doctor, _ = exchange_save("wa2", "Mon médecin traitant est le Dr Martin.", "Noté.")
    index_everything()
    return vector_store, thanks, answered, doctor


def test_small_talk_on_both_sides_has_no_point_and_is_never_injected(world):
    store, thanks, answered, doctor = world

    points = set(store.iter_ids(CONVERSATIONS))
    assert point_id(KIND_MESSAGE, thanks.id) not in points
    assert {point_id(KIND_MESSAGE, answered.id), point_id(KIND_MESSAGE, doctor.id)} <= points
    result = auto_retrieve(message="Qui est mon médecin ?", channel="c3")
    injected = [m["id"] for m in result.memories]
    assert f"message:{thanks.id}" not in injected
    assert f"message:{doctor.id}" in injected


def test_the_doctor_finds_nothing_missing(world):
    reports = memory_doctor()

    assert all(not r.missing for r in reports), reports
