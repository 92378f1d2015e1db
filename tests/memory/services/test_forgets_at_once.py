"""Two forgets at once take each row once (a confirmation sent twice, a double click on
« Confirmer l'oubli », a client retrying POST /forget while the first still selects).

The selection is read outside any transaction (the LLM judge takes seconds); the second
forget re-pointed the rows the first had taken to itself, and since the fact kept the
first forget's date, the undo of the second took it for « forgotten alone before » and left
it forgotten, while the undo of the first gave back nothing and said all came back (QA 8a).
Now each forget takes, under the write lock, only what no other forget took since.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact, Forgetting
from memory.services import forgetting as forgetting_module
from memory.services.facts import fact_store
from memory.services.forgetting import forgetting_restore, topic_forget

pytestmark = pytest.mark.django_db

TOPIC = "mariage de Marie à Lisbonne"


@pytest.fixture
def quiet_world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    settings.ANTHROPIC_API_KEY = ""


def _second_forget_while_the_first_selects(monkeypatch, **second) -> None:
    real_select = forgetting_module.select
    calls = {"n": 0}

    def select(*args, **kwargs):
        chosen = real_select(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:  # the first has read its selection: the second lands now
            topic_forget(**second)
        return chosen

    monkeypatch.setattr(forgetting_module, "select", select)


def test_a_confirmation_sent_twice_makes_one_forget_and_its_undo_gives_everything_back(
    quiet_world, monkeypatch
):
    fact, _ = fact_store(key="mariage_marie", value="Mariage de Marie à Lisbonne le 14 juin")
    confirmed = [f"fact:{fact.id}"]
    _second_forget_while_the_first_selects(
        monkeypatch, topic=TOPIC, actor=Actor.USER, only=confirmed
    )

    first = topic_forget(topic=TOPIC, actor=Actor.USER, only=confirmed)

    forgets = list(Forgetting.objects.all())
    assert len(forgets) == 1
    assert first.forgetting_id is None and first.empty  # the other one took it
    assert first.ids_not_taken == confirmed
    assert Fact.all_objects.get(pk=fact.pk).forgotten
    forgetting_restore(forgetting_id=forgets[0].id, actor=Actor.USER)
    assert not Fact.all_objects.get(pk=fact.pk).forgotten


def test_two_overlapping_forgets_each_take_what_the_other_did_not_and_each_undo_its_own(
    quiet_world, monkeypatch
):
    wedding, _ = fact_store(key="mariage_marie", value="Mariage de Marie à Lisbonne le 14 juin")
    trip, _ = fact_store(key="voyage_lisbonne", value="Voyage à Lisbonne pour le mariage de Marie")
    _second_forget_while_the_first_selects(
        monkeypatch, topic=TOPIC, actor=Actor.USER, only=[f"fact:{wedding.id}"]
    )

    result = topic_forget(
        topic=TOPIC, actor=Actor.USER, only=[f"fact:{wedding.id}", f"fact:{trip.id}"]
    )

    assert result.counts["facts"] == 1 and result.ids_not_taken == [f"fact:{wedding.id}"]
    by_fact = dict(Fact.all_objects.values_list("pk", "forgetting_id"))
    assert by_fact[trip.pk] == result.forgetting_id != by_fact[wedding.pk]
    forgetting_restore(forgetting_id=result.forgetting_id, actor=Actor.USER)
    assert not Fact.all_objects.get(pk=trip.pk).forgotten
    assert Fact.all_objects.get(pk=wedding.pk).forgotten  # the other forget's, still


def test_a_fact_the_other_forget_took_is_not_taken_back_as_drawn_from_a_message_still_free(
    quiet_world, monkeypatch
):
    from tests.agent.exchanges import past_exchange

    said = past_exchange("whatsapp", "Le mariage de Marie à Lisbonne est le 14 juin", "Noté.")
    fact, _ = fact_store(
        key="mariage_marie",
        value="Mariage de Marie à Lisbonne le 14 juin",
        actor=Actor.AGENT,
        source_message_id=said.id,
    )
    _second_forget_while_the_first_selects(
        monkeypatch, topic=TOPIC, actor=Actor.USER, only=[f"fact:{fact.id}"]
    )

    result = topic_forget(
        topic=TOPIC, actor=Actor.USER, only=[f"message:{said.id}", f"fact:{fact.id}"]
    )

    assert result.counts["exchanges"] == 1 and result.counts["facts"] == 0
    assert Fact.all_objects.get(pk=fact.pk).forgetting_id != result.forgetting_id
