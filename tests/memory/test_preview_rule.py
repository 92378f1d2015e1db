"""Which logged previews a forget redacts: those made of the messages it took (one, or
several answered together, the last maybe cut), never another that only opens like one."""

from __future__ import annotations

import pytest

from memory.models import MemoryRetrieval, Message
from memory.services.forgetting import topic_forget

pytestmark = pytest.mark.django_db

TAKEN = "Est-ce que tu te souviens de ce que je t'ai dit sur le voyage à Zanzibar ?"
OTHER = "Est-ce que tu te souviens de ce que je t'ai dit sur ma recette de crêpes ?"


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return vector_store


def test_an_unrelated_preview_with_the_same_opening_is_kept(world):
    Message.objects.create(channel="whatsapp", role="user", content=TAKEN)
    log = MemoryRetrieval.objects.create(channel="whatsapp", message_preview=OTHER)

    result = topic_forget(topic="le voyage à Zanzibar", actor="user")
    assert result.forgetting_id is not None

    log.refresh_from_db()
    assert log.message_preview == OTHER, "a preview about crêpes was redacted"


def test_a_short_taken_message_does_not_redact_every_preview_holding_it(world):
    from memory.services.removal import PreviewRule

    rule = PreviewRule.of(texts=["Merci beaucoup !"])
    assert not rule.hits("Merci beaucoup ! Tu peux me rappeler l'heure du dentiste ?")


LONG = "Sophie a réservé l'hôtel Mnarani et les billets pour le 3 août, départ de Lyon " * 4


@pytest.mark.parametrize(
    "preview, taken, hit",
    [
        ("Merci beaucoup !", ["Merci beaucoup !"], True),  # the message itself
        ("Ok Oublie le mariage", ["Ok", "Oublie le mariage"], True),  # answered together
        ("Au fait Oublie le mariage de Marie", ["Au fait", "Oublie le mariage de Marie"], True),
        ("Au fait Oublie le mariage de Marie", ["Oublie le mariage de Marie"], False),
        ("Au fait Oublie le mariage de Marie", ["Au fait"], False),
        (None, [LONG], True),  # a long message's cut preview
        (None, [LONG + " et encore"], True),
        ("Sophie a réservé", [LONG], False),  # another text that opens like it
    ],
)
def test_a_preview_is_redacted_when_it_is_made_of_taken_messages(preview, taken, hit):
    from memory.services.formatting import clean_text
    from memory.services.removal import PreviewRule
    from memory.services.retrieval.log import PREVIEW_CHARS

    preview = preview or clean_text(taken[0], max_chars=PREVIEW_CHARS)

    assert PreviewRule.of(texts=taken).hits(preview) is hit
