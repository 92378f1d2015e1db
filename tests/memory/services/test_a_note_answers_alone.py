"""A question about a context note receives that note, even when no memory answers it.

QA: with notes tagged #makilab, « Sur quelle machine tourne le projet Zéphyrin ? »
injected nothing (the relevance gate read the memories only, and a gated message lost
its notes too), while an unrelated question that passed the gate brought every tagged
note. A gated message still receives the notes it is about, and only those.
"""

from __future__ import annotations

import pytest

from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_rows
from memory.services.retrieval import auto_retrieve

pytestmark = pytest.mark.django_db

ZEPHYRIN = "Projets/Zephyrin.md"
CLAFOUTIS = "Desserts/Clafoutis.md"


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    from memory.models import Fact
    from memory.services.notes import notes_cache_clear

    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = vault = tmp_path / "vault"
    (vault / "Projets").mkdir(parents=True)
    (vault / "Desserts").mkdir()
    (vault / ZEPHYRIN).write_text(
        "#makilab\nLe projet Zéphyrin tourne sur la machine Hermès, un serveur à Roubaix.\n"
    )
    (vault / CLAFOUTIS).write_text(
        "#makilab\nRecette du clafoutis de grand-mère : cerises, œufs, lait, sucre.\n"
    )
    (vault / "Divers.md").write_text(
        "#makilab\nNotes diverses : courses du samedi, pain, beurre, lait, œufs, farine, "
        "sucre, sel, poivre, huile, riz. Le projet Zéphyrin tourne sur la machine Hermès.\n"
    )
    (vault / "Routine.md").write_text(
        "#vie-perso #makilab\nRoutine : sport le matin, lecture en soirée. Mardi soir : "
        "escalade. Jeudi matin : piscine.\n"
    )
    (vault / "Agenda.md").write_text(
        "#makilab\nAujourd'hui : appeler le plombier. Le club de lecture se réunit le mardi "
        "soir. Réunion de copropriété le 12 mars à 7 heures.\n"
    )
    fact_store(key="chat", value="Le chat s'appelle Pistache")
    fact_store(key="velo", value="Le vélo est un Peugeot bleu")
    index_rows(KIND_FACT, list(Fact.all_objects.values_list("id", flat=True)))
    notes_cache_clear()
    yield vault
    notes_cache_clear()


@pytest.mark.parametrize(
    ("message", "paths"),
    [
        # Divers.md says it past its twelfth word (review: only its first twelve were read).
        ("Sur quelle machine tourne le projet Zéphyrin ?", [ZEPHYRIN, "Divers.md"]),
        ("Comment fait-on le clafoutis de grand-mère ?", [CLAFOUTIS]),
    ],
)
def test_a_question_about_a_note_receives_it_and_only_it(world, message, paths):
    result = auto_retrieve(message=message, channel="mission_control")

    assert sorted(note["path"] for note in result.notes) == sorted(paths)
    assert all(path in result.prompt_block for path in paths)


@pytest.mark.parametrize(
    "message",
    [
        "Quelle est la capitale de l'Australie ?",
        "merci",
        "ok super",
        # Review: a word cut at its apostrophe, one generic word, numbers, the tag.
        "Comment ça va aujourd'hui ?",
        "Tu fais quoi ce soir ?",
        "Combien font 12 fois 7 ?",
        "Makilab, quelle heure est-il ?",
        # Second review: words of time, a goodbye's phrases, the tag cut as text is.
        "Tu préfères le matin ou le soir ?",
        "Merci, bonne soirée à toi aussi, à demain matin !",
        "Un conseil perso pour ce soir ?",
    ],
)
def test_a_message_no_note_speaks_of_still_receives_nothing(world, message):
    result = auto_retrieve(message=message, channel="mission_control")

    assert result.notes == [] and result.memories == [] and result.prompt_block == ""
