"""`memory_doctor --fix` only says "réparé" and "Tout est cohérent." when the repair worked.

Guards the verdict after a repair: the comparison runs again once the repair is
done, so a repair whose embeddings failed (rows ending ``failed``, points still
missing) is reported as incomplete, in French, and the command exits with an
error instead of claiming coherence; a repair that works still says so.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.exceptions import EmbeddingInvalid
from memory.models import Fact, IndexState
from memory.services.facts import fact_store
from memory.stores.vectors import KNOWLEDGE
from tests.fakes.embedder import HashEmbedder, install

pytestmark = pytest.mark.django_db

FACTS = 3


@pytest.fixture
def points_lost(vector_store, monkeypatch) -> HashEmbedder:
    """Indexed facts whose points were then deleted behind the machine's back."""
    embedder = HashEmbedder()
    install(monkeypatch, embedder)
    for i in range(FACTS):
        fact_store(key=f"fait_{i}", value=f"Le fait numéro {i} parle du vélo bleu")
    call_command("reindex", stdout=StringIO(), stderr=StringIO())
    vector_store.delete(KNOWLEDGE, list(vector_store.iter_ids(KNOWLEDGE)))
    return embedder


def test_a_fix_that_cannot_embed_says_it_failed_and_exits_with_an_error(points_lost, vector_store):
    points_lost.error = EmbeddingInvalid("réponse illisible de l'embedder")
    out = StringIO()

    with pytest.raises(CommandError, match="n'a pas tout réparé"):
        call_command("memory_doctor", "--fix", stdout=out, stderr=StringIO())

    said = out.getvalue()
    # The repair did fail: no point came back, every row ended failed.
    assert vector_store.count(KNOWLEDGE) == 0
    assert Fact.all_objects.filter(index_state=IndexState.FAILED).count() == FACTS
    assert "Tout est cohérent." not in said, said
    assert "→ réparé" not in said, said
    assert "réparation incomplète" in said and "3 en échec d'indexation" in said, said
    assert "La réparation a échoué" in said, said
    assert "réponse illisible de l'embedder" in said, said


def test_a_fix_that_works_still_says_repaired_and_coherent(points_lost, vector_store):
    out = StringIO()

    call_command("memory_doctor", "--fix", stdout=out, stderr=StringIO())

    said = out.getvalue()
    assert vector_store.count(KNOWLEDGE) == FACTS
    assert "knowledge: 3 sans point, 0 points orphelins, 0 périmés → réparé" in said, said
    assert said.strip().endswith("Tout est cohérent."), said


def test_without_fix_differences_are_reported_without_an_error(points_lost):
    out = StringIO()

    call_command("memory_doctor", stdout=out, stderr=StringIO())

    said = out.getvalue()
    assert "Des différences restent : relancez avec --fix." in said, said
    assert "La réparation a échoué" not in said, said
