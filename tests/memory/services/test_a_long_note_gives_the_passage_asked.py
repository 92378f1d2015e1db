"""A long context note gives the passage a message is about, not only its first lines.

QA (left undone in the last sessions' notes): a context note injects its first ~500
characters; the owner's answer further down (« le code du portail ») was neither
injected for a question about it nor named by a forget's preview of its topic.
"""

from __future__ import annotations

import pytest

from memory.services.facts import fact_store
from memory.services.indexing import KIND_FACT, index_rows
from memory.services.retrieval import auto_retrieve

pytestmark = pytest.mark.django_db

MAISON = "Maison.md"
HEAD = (
    "#makilab\n# La maison de Saint-Malo\n\n"
    "Nous avons acheté la maison en 2019. Elle a trois chambres, un grand salon et une "
    "véranda qui donne sur le jardin. Le toit a été refait en 2021 par l'entreprise Le Goff. "
    "Le chauffage est une pompe à chaleur installée la même année, entretenue chaque automne. "
    "Le jardin compte deux pommiers, un potager et une cabane à outils. Les voisins de "
    "gauche, les Martin, arrosent les plantes quand nous partons en vacances. La cave sert "
    "de réserve pour le vin et les conserves de tomates.\n\n"
)
ACCESS = (
    "## Accès\n\n"
    "Le code du portail du garage est 4417B. La clé de secours est cachée sous le pot de "
    "lavande, à droite de la porte d'entrée.\n\n"
)
TAIL = "## Travaux prévus\n\nRepeindre les volets en bleu au printemps, changer la chaudière.\n"


@pytest.fixture
def vault(vector_store, local_embedder, settings, tmp_path):
    from memory.models import Fact
    from memory.services.notes import notes_cache_clear

    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = folder = tmp_path / "vault"
    folder.mkdir()
    (folder / MAISON).write_text(HEAD + ACCESS + TAIL)
    (folder / "Court.md").write_text("#makilab\nLe chat s'appelle Pistache et dort au grenier.\n")
    fact_store(key="velo", value="Le vélo est un Peugeot bleu")
    index_rows(KIND_FACT, list(Fact.all_objects.values_list("id", flat=True)))
    notes_cache_clear()
    yield folder
    notes_cache_clear()


def test_a_question_about_a_later_passage_receives_that_passage(vault):
    result = auto_retrieve(message="Quel est le code du portail du garage ?", channel="whatsapp")

    maison = next(n for n in result.notes if n["path"] == MAISON)
    assert "4417B" in maison["text"]
    assert "4417B" in result.prompt_block
    # The passage is marked as one: the note goes on before it.
    assert maison["text"].startswith("… ")


def test_a_question_about_the_head_keeps_the_head(vault):
    result = auto_retrieve(
        message="Qui a refait le toit de la maison de Saint-Malo ?", channel="whatsapp"
    )

    maison = next(n for n in result.notes if n["path"] == MAISON)
    assert "Le Goff" in maison["text"]
    assert "4417B" not in maison["text"]


def test_the_passage_stays_within_a_note_line(vault):
    from memory.services.formatting import NOTE_MAX_CHARS
    from memory.services.notes_relevance import message_words, note_injected_text
    from memory.stores.notes import note_build

    one_block = note_build(
        path="Long.md",
        text="#makilab\n"
        + "Mot de remplissage sans rapport. " * 60
        + "Le digicode de l'entrée est 9921A. "
        + "Encore du remplissage sans rapport. " * 60,
        source="tag",
    )

    text = note_injected_text(one_block, message_words("Quel est le digicode de l'entrée ?"))

    assert "9921A" in text
    assert len(text) <= NOTE_MAX_CHARS


def test_without_a_message_a_note_injects_its_head(vault):
    from memory.services.notes_relevance import message_words, note_injected_text
    from memory.stores.notes import note_build

    note = note_build(path=MAISON, text=HEAD + ACCESS + TAIL, source="tag")

    assert note_injected_text(note) == note_injected_text(note, message_words("merci"))
    assert "Saint-Malo" in note_injected_text(note)


def test_a_forget_preview_names_a_note_holding_the_topic_past_its_head(vault):
    from memory.services.forgetting import topic_forget_preview

    assert topic_forget_preview(topic="portail garage").notes == [MAISON]
    assert topic_forget_preview(topic="pistache").notes == ["Court.md"]


def test_one_shared_word_does_not_swap_the_head_for_a_passage(vault):
    """Review: « Peux-tu relire mon code Python ? » shares « code » with the gate's
    paragraph only: the note's head stays."""
    from memory.services.notes_relevance import message_words, note_injected_text
    from memory.stores.notes import note_build

    note = note_build(path=MAISON, text=HEAD + ACCESS + TAIL, source="tag")

    text = note_injected_text(note, message_words("Peux-tu relire mon code Python avant demain ?"))

    assert "4417B" not in text and "Saint-Malo" in text


def test_a_hidden_comment_past_the_head_is_never_injected(vault):
    from memory.services.notes_relevance import message_words, note_injected_text
    from memory.stores.notes import note_build

    note = note_build(
        path=MAISON,
        text=HEAD + "%% Le code secret du coffre du garage est 9981. %%\n\n" + ACCESS,
        source="tag",
    )

    text = note_injected_text(note, message_words("Quel est le code secret du coffre du garage ?"))

    assert "9981" not in text
