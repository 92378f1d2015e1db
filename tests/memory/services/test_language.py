"""text_language: French or English by the stop words a text holds, "" when it cannot tell."""

from __future__ import annotations

import pytest

from memory.services.language import ENGLISH, FRENCH, other_language, text_language


@pytest.mark.parametrize(
    "text, language",
    [
        ("Le Dr Brun m'avait prescrit quoi comme examen en mars ?", FRENCH),
        ("c'est quand le voyage scolaire de Cal à Londres ?", FRENCH),
        ("Résumé WhatsApp – avril 2025. Dégustation primeurs du 2024 le 1er avril", FRENCH),
        ("when was Cal's school trip to London?", ENGLISH),
        ("What did the doctor give me for my sore throat?", ENGLISH),
        ("Tom Hartley wants 600 btl of Les Trois Chênes 2021 for their spring list", ENGLISH),
        ("Doliprane 6h", ""),
        ("👍", ""),
        ("", ""),
        ("a on as", ""),  # words both languages have tell nothing
    ],
)
def test_text_language(text, language):
    assert text_language(text) == language


def test_only_two_known_languages_that_differ_are_other():
    assert other_language(ENGLISH, FRENCH)
    assert not other_language(FRENCH, FRENCH)
    assert not other_language("", FRENCH)
    assert not other_language(ENGLISH, "")
    assert not other_language(ENGLISH, None)  # a point indexed before its language was read


@pytest.mark.django_db
def test_every_point_records_the_language_of_its_own_text():
    from memory.models import Actor, Message, MessageRole, Summary
    from memory.services.facts import fact_store
    from memory.services.index_documents import (
        exchange_document,
        fact_document,
        live_document,
        summary_documents,
    )

    question = Message.objects.create(
        channel="whatsapp", role=MessageRole.USER, content="c'est quand le dentiste ?"
    )
    reply = Message.objects.create(
        channel="whatsapp", role=MessageRole.ASSISTANT, content="Mardi à 9 h.", reply_to=question
    )
    fact, _ = fact_store(key="dentist", value="Dr Martin, on the second floor", actor=Actor.USER)
    long_text = " ".join(
        ["Le mois de mars a été chargé pour la famille et pour le travail."] * 30
        + ["In April we went to Berlin with the kids and the dog for a week."] * 40
    )
    summary = Summary.objects.create(channel="whatsapp", content=long_text)

    assert exchange_document(question, reply).payload["lang"] == FRENCH
    assert fact_document(fact).payload["lang"] == ENGLISH
    assert live_document(reply).payload["lang"] == ""  # « Mardi à 9 h. »: no stop word
    whole, *parts = summary_documents(summary)
    assert whole.payload["lang"] in (FRENCH, ENGLISH)
    assert {part.payload["lang"] for part in parts} == {FRENCH, ENGLISH}
