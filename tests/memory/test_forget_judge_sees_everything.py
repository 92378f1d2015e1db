"""The forget's LLM judge decides on every candidate, and sees what a long one says
about the topic: nothing about it is left behind because it came 61st or late in a text."""

from __future__ import annotations

import json

import pytest

from memory.models import Message, Summary
from memory.services import forgetting_judge
from memory.services.forgetting import topic_forget, topic_forget_preview
from memory.services.forgetting_judge import LLM_CANDIDATES_MAX
from memory.services.forgetting_select import contains_all, topic_terms
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar"
TOPIC = f"le voyage à {SECRET}"
BIKE = (
    "Le propriétaire a parlé de son vélo de route : chaîne changée, dérailleur réglé, "
    "pneus neufs pour l'hiver, sortie de cent kilomètres avec son club le dimanche. "
)


class FairJudge:
    """Takes every candidate whose text, as shown to it, holds every word of the topic."""

    def __init__(self) -> None:
        self.shown: list[list[dict]] = []  # the candidates of each call

    def __call__(self, body: dict) -> str:
        data = json.loads(body["messages"][-1]["content"])
        self.shown.append(data["souvenirs"])
        terms = topic_terms(data["sujet"])
        ids = [s["id"] for s in data["souvenirs"] if contains_all(s["texte"], terms)]
        return json.dumps({"ids": ids})


@pytest.fixture
def judge(vector_store, local_embedder, fake_anthropic) -> FairJudge:
    fake_anthropic.handler = FairJudge()
    return fake_anthropic.handler


def test_a_forget_takes_all_70_exchanges_about_the_topic(judge):
    for i in range(70):
        exchange_save("whatsapp", f"Étape {i} du voyage à {SECRET} : réservation n° {i}", "Noté.")
    index_everything()

    preview = topic_forget_preview(topic=TOPIC)
    result = topic_forget(topic=TOPIC, actor="user")

    assert preview.counts()["exchanges"] == 70
    assert result.selection == "llm" and result.counts["exchanges"] == 70
    assert not Message.objects.filter(content__contains=SECRET).exists()
    assert all(len(shown) <= LLM_CANDIDATES_MAX for shown in judge.shown)


def test_past_the_judges_bound_a_candidate_is_taken_if_it_holds_every_word(judge, monkeypatch):
    """Beyond the judged candidates, the word rule decides (never silently kept)."""
    monkeypatch.setattr(forgetting_judge, "LLM_CANDIDATES_MAX", 4)
    monkeypatch.setattr(forgetting_judge, "LLM_JUDGE_CALLS_MAX", 2)
    for i in range(12):
        exchange_save("whatsapp", f"Étape {i} du voyage à {SECRET} : réservation n° {i}", "Noté.")
    for drink in ("café", "thé", "jus"):
        exchange_save("whatsapp", f"Le {drink} de {SECRET} est fort", "Ah oui.")
    index_everything()

    result = topic_forget(topic=TOPIC, actor="user")

    assert [len(shown) for shown in judge.shown] == [4, 4]
    assert result.counts["exchanges"] == 12
    assert not Message.objects.filter(content__contains="du voyage à").exists()
    assert Message.objects.filter(content__contains=f"de {SECRET} est fort").count() == 3


def test_a_long_summary_about_the_topic_past_its_start_is_judged_on_that_passage(judge):
    Summary.objects.create(
        channel="whatsapp",
        content=BIKE * 4 + f"Enfin, il a réservé un voyage à {SECRET} pour août avec Sophie.",
    )
    Summary.objects.create(channel="whatsapp", content=BIKE * 4)
    index_everything()

    result = topic_forget(topic=TOPIC, actor="user")

    assert result.counts["summaries"] == 1
    assert not Summary.objects.filter(content__contains=SECRET).exists()
    assert Summary.objects.count() == 1


def test_the_judge_sees_each_word_of_the_topic_in_a_long_text_within_a_bound(judge):
    """A word repeated all along the text does not crowd out the other word's passage."""
    Summary.objects.create(
        channel="whatsapp",
        content=("Un voyage en vélo, puis un autre voyage. " + BIKE) * 40
        + f"Et l'île de {SECRET}, où il part en août."
        + BIKE * 10,
    )
    index_everything()

    topic_forget_preview(topic=TOPIC)

    [text] = [s["texte"] for shown in judge.shown for s in shown if s["id"].startswith("summary:")]
    assert SECRET in text and "voyage" in text
    assert len(text) <= forgetting_judge.LLM_TEXT_MAX_CHARS
