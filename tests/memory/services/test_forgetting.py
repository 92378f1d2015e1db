"""Forgetting: exactly the topic, previewable, undoable for a while, then final."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import (
    Fact,
    FactRevision,
    Forgetting,
    ForgettingState,
    IndexState,
    MemoryRetrieval,
    Message,
    Summary,
)
from memory.services.facts import fact_store
from memory.services.forgetting import (
    TOPIC_TOO_VAGUE_MESSAGE,
    forgetting_restore,
    forgettings_purge,
    topic_forget,
    topic_forget_preview,
)
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, index_rows
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE, point_id
from tests.fakes.anthropic import text_message
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

WEDDING = [
    ("whatsapp", "Le mariage de Marie à Lisbonne aura lieu le 14 juin", "Noté, le 14 juin !"),
    ("mission_control", "Pour le mariage de Marie à Lisbonne je dois réserver l'hôtel", "OK."),
]
UNRELATED = [
    ("whatsapp", "Notre mariage à nous, c'était à Tarbes en 2019", "Beau souvenir."),
    ("whatsapp", "Le chien de Marie s'appelle Filou", "Trop mignon."),
    ("mission_control", "Déplacement pro à Lisbonne la semaine prochaine", "Bon voyage."),
]
WEDDING_WORDS = "mariage de marie a lisbonne"


@pytest.fixture
def world(vector_store, local_embedder, settings, tmp_path):
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    wedding = [exchange_save(*e)[0] for e in WEDDING]
    others = [exchange_save(*e)[0] for e in UNRELATED]
    facts = {
        "wedding": fact_store(key="mariage_marie", value="Mariage de Marie à Lisbonne le 14 juin")[
            0
        ],
        "dog": fact_store(key="chien_marie", value="Le chien de Marie s'appelle Filou")[0],
        "own": fact_store(key="notre_mariage", value="Mariage du propriétaire à Tarbes en 2019")[0],
    }
    summaries = {
        "wedding": Summary.objects.create(
            channel="whatsapp", content="Préparatifs du mariage de Marie à Lisbonne."
        ),
        "other": Summary.objects.create(channel="whatsapp", content="Sortie vélo à Tarbes."),
    }
    index_everything()
    return {
        "store": vector_store,
        "wedding": wedding,
        "others": others,
        "facts": facts,
        "summaries": summaries,
    }


def _points(store, collection):
    return set(store.iter_ids(collection))


def test_a_forget_takes_what_is_about_the_topic_and_nothing_else(world):
    result = topic_forget(topic="le mariage de Marie à Lisbonne")

    assert result.counts == {
        "exchanges": 2,
        "messages": 4,
        "facts": 1,
        "summaries": 1,
        "history": 0,
    }
    assert set(Message.objects.values_list("content", flat=True)) >= {u for _, u, _ in UNRELATED}
    assert not Message.objects.filter(content__contains="mariage de Marie").exists()
    assert set(Fact.objects.values_list("key", flat=True)) == {"chien_marie", "notre_mariage"}
    assert list(Summary.objects.values_list("content", flat=True)) == ["Sortie vélo à Tarbes."]


def test_the_preview_shows_what_it_would_take_and_changes_nothing(world):
    plan = topic_forget_preview(topic="le mariage de Marie à Lisbonne")
    assert plan.counts() == {
        "exchanges": 2,
        "messages": 4,
        "facts": 1,
        "summaries": 1,
        "history": 0,
    }
    assert [f["key"] for f in plan.facts] == ["mariage_marie"]
    assert "mariage de Marie" in plan.as_text()
    assert not Forgetting.objects.exists()
    assert Message.objects.count() == 10 and Fact.objects.count() == 3


def test_the_answer_for_the_llm_names_no_forgotten_content(world):
    text = topic_forget(topic="le mariage de Marie à Lisbonne").as_text()
    for word in ("Marie", "Lisbonne", "mariage", "14 juin", "hôtel"):
        assert word.lower() not in text.lower()
    assert "annuler" in text


def test_a_vague_topic_is_refused_in_french(world):
    with pytest.raises(MemoryServiceError) as error:
        topic_forget(topic="tout ça")
    assert str(error.value) == TOPIC_TOO_VAGUE_MESSAGE.format(topic="tout ça")


def test_points_leave_qdrant_and_come_back_on_restore(world, django_capture_on_commit_callbacks):
    store = world["store"]
    wedding_points = {point_id(KIND_MESSAGE, m.id) for m in world["wedding"]}
    fact_point = point_id(KIND_FACT, world["facts"]["wedding"].id)
    with django_capture_on_commit_callbacks(execute=True):
        result = topic_forget(topic="le mariage de Marie à Lisbonne")
    assert not wedding_points & _points(store, CONVERSATIONS)
    assert fact_point not in _points(store, KNOWLEDGE)

    with django_capture_on_commit_callbacks(execute=False):
        forgetting_restore(forgetting_id=result.forgetting_id, actor="user")
    index_everything()  # what the tasks sent on commit do
    assert wedding_points <= _points(store, CONVERSATIONS)
    assert fact_point in _points(store, KNOWLEDGE)
    assert Message.objects.count() == 10 and Fact.objects.count() == 3
    assert Summary.objects.count() == 2
    fact = Fact.objects.get(key="mariage_marie")
    assert not fact.forgotten and fact.revisions.first().reason == "restored"
    from memory.services.search import memory_search

    assert memory_search(query="mariage Lisbonne", mode="text")


def test_after_the_retention_window_it_is_purged_for_good(world):
    result = topic_forget(topic="le mariage de Marie à Lisbonne")
    fact_id = world["facts"]["wedding"].id
    assert forgettings_purge() == 0  # within the window: nothing
    assert forgettings_purge(now=timezone.now() + timedelta(days=8)) == 1
    forgetting = Forgetting.objects.get(pk=result.forgetting_id)
    assert forgetting.state == ForgettingState.PURGED and "Marie" not in forgetting.topic
    assert not Message.all_objects.filter(content__contains="mariage de Marie").exists()
    assert not Fact.all_objects.filter(pk=fact_id).exists()
    assert not FactRevision.objects.filter(fact_id=fact_id).exists()
    assert not Summary.all_objects.filter(content__contains="mariage de Marie").exists()
    with pytest.raises(MemoryServiceError):
        forgetting_restore(forgetting_id=result.forgetting_id, actor="user")


def test_with_an_llm_the_llm_judges_what_is_about_the_topic(world, fake_anthropic):
    wedding = world["wedding"][0]
    fake_anthropic.script(text_message(json.dumps({"ids": [f"message:{wedding.id}"]})))
    result = topic_forget(topic="le mariage de Marie à Lisbonne")
    assert result.selection == "llm"
    assert result.counts["exchanges"] == 1 and result.counts["facts"] == 0
    [request] = fake_anthropic.message_requests
    assert "mariage de Marie" in request.messages[0]["content"]
    assert not Message.objects.filter(pk=wedding.id).exists()


def test_a_failing_llm_falls_back_to_the_all_words_rule(world, fake_anthropic):
    fake_anthropic.script(text_message("pas du JSON"))
    result = topic_forget(topic="le mariage de Marie à Lisbonne")
    assert result.selection == "words" and result.counts["exchanges"] == 2


def test_a_store_that_is_down_delays_the_points_never_the_forget(world, settings):
    from memory.stores.vectors import get_vector_store, vector_store_reset

    folder = settings.QDRANT_PATH
    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"
    settings.QDRANT_TIMEOUT_S = 1
    topic_forget(topic="le mariage de Marie à Lisbonne")
    assert not Message.objects.filter(content__contains="mariage de Marie").exists()
    vector_store_reset()
    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = folder
    index_everything()  # the sweep, once Qdrant is back
    points = _points(get_vector_store(), CONVERSATIONS)
    assert not {point_id(KIND_MESSAGE, m.id) for m in world["wedding"]} & points


def test_a_point_written_by_a_task_that_read_the_row_before_the_forget_does_not_survive(
    world, monkeypatch
):
    """The task read the exchange, the forget ran, then the task wrote its (stale) point."""
    import memory.services.indexing as indexing

    store = world["store"]
    root = world["wedding"][0]
    Message.all_objects.filter(pk=root.pk).update(version=99)  # a change: the task will embed
    real_write = indexing._write

    def write_after_a_forget(claim, vectors):
        if any(d.row_id == root.pk for d in claim.documents):
            topic_forget(topic="le mariage de Marie à Lisbonne")
        return real_write(claim, vectors)

    monkeypatch.setattr(indexing, "_write", write_after_a_forget)
    report = index_rows(KIND_MESSAGE, [root.pk])
    monkeypatch.setattr(indexing, "_write", real_write)
    assert report.stale == 1  # its finish failed: the row changed meanwhile
    index_rows(KIND_MESSAGE, [root.pk])  # the task its bump sent
    assert point_id(KIND_MESSAGE, root.pk) not in _points(store, CONVERSATIONS)
    assert Message.all_objects.get(pk=root.pk).index_state == IndexState.INDEXED


def test_semantic_search_never_shows_an_exchange_t1_no_longer_has(world):
    from memory.services.search import memory_search

    other = world["others"][2]  # the Lisbon work trip
    with connection.cursor() as cursor:  # gone from T1 behind the indexing's back
        cursor.execute("DELETE FROM messages WHERE reply_to_id = %s", [other.pk])
        cursor.execute("DELETE FROM messages WHERE id = %s", [other.pk])
    assert point_id(KIND_MESSAGE, other.pk) in _points(world["store"], CONVERSATIONS)
    hits = memory_search(query="déplacement professionnel à Lisbonne", mode="semantic")
    assert str(other.pk) not in {h.id for h in hits if h.kind == "exchange"}


def test_the_retrieval_log_keeps_no_forgotten_text(world):
    from memory.services.retrieval import auto_retrieve

    result = auto_retrieve(message="Quand a lieu le mariage de Marie à Lisbonne ?", channel="c")
    assert any("Lisbonne" in m["text"] for m in MemoryRetrieval.objects.get().memories)
    topic_forget(topic="le mariage de Marie à Lisbonne")
    row = MemoryRetrieval.objects.get(pk=result.retrieval_id)
    assert "Lisbonne" not in json.dumps(row.memories, ensure_ascii=False)
    assert "Lisbonne" not in row.message_preview


def test_a_confirmation_never_takes_more_than_its_preview_showed(world, fake_anthropic):
    """With an LLM judge, a second selection may say more: the confirmed ids bound it."""
    wedding, dog_fact = world["wedding"][0], world["facts"]["dog"]
    fake_anthropic.script(
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),
        text_message(json.dumps({"ids": [f"message:{wedding.id}", f"fact:{dog_fact.id}"]})),
    )
    plan = topic_forget_preview(topic="le mariage de Marie à Lisbonne")
    assert plan.item_ids() == [f"message:{wedding.id}"]
    result = topic_forget(topic="le mariage de Marie à Lisbonne", only=plan.item_ids())
    assert result.counts["exchanges"] == 1 and result.counts["facts"] == 0
    assert Fact.objects.filter(pk=dog_fact.id).exists()


@pytest.fixture
def agent_items(world, agent_items_about_the_wedding):
    return agent_items_about_the_wedding


def test_the_dry_run_names_the_agents_items_by_their_kind_not_as_facts(agent_items):
    knows, goal = agent_items
    text = topic_forget_preview(topic="le mariage de Marie à Lisbonne").as_text()

    assert "- fait mariage_marie : Mariage de Marie à Lisbonne le 14 juin" in text
    assert "- Moi (l'agent) : Je connais le mariage de Marie à Lisbonne" in text
    assert "- Objectif de l'agent : Comprendre le mariage de Marie à Lisbonne" in text
    assert knows.key not in text and goal.key not in text
    assert text.count("- fait ") == 1


def test_an_old_value_in_the_dry_run_is_named_by_its_items_kind(agent_items):
    from memory.models import Actor
    from memory.services.facts import fact_update

    knows, _ = agent_items
    fact_update(fact=knows, actor=Actor.USER, value="Je connais Marie")
    fact_update(fact=Fact.objects.get(key="notre_mariage"), actor=Actor.USER, value="Tarbes")
    FactRevision.objects.filter(fact__key="notre_mariage").update(
        old_value="Le mariage de Marie à Lisbonne, puis le nôtre"
    )
    text = topic_forget_preview(topic="le mariage de Marie à Lisbonne").as_text()

    assert "- Moi (l'agent), ancienne valeur : Je connais le mariage de Marie" in text
    assert "- fait notre_mariage, ancienne valeur : Le mariage de Marie" in text
    assert knows.key not in text and "du fait" not in text


def test_the_answer_for_the_llm_says_its_fact_count_holds_the_agents_items(agent_items):
    """Its counts hold the owner's facts and the agent's items together: it says so."""
    text = topic_forget(topic="le mariage de Marie à Lisbonne").as_text()

    assert "3 fait(s) ou élément(s) de l'agent" in text
    for word in ("Marie", "Lisbonne", "mariage", "Comprendre", "connais"):
        assert word.lower() not in text.lower()


def test_the_preview_counts_the_owners_facts_and_the_agents_items_apart(agent_items):
    plan = topic_forget_preview(topic="le mariage de Marie à Lisbonne")

    assert plan.counts_text() == ("2 échange(s), 1 fait(s), 2 élément(s) de l'agent et 1 résumé(s)")


def test_a_fact_row_without_a_kind_is_counted_and_named_as_the_owners():
    """One rule for "whose fact is it" (memory.models.choices.is_owner_kind): the dry run
    called a row without a kind an agent's item while the page called it the owner's."""
    from memory.services.forgetting_plan import ForgetPlan

    plan = ForgetPlan(topic="vélo", selection="words")
    plan.facts = [{"id": 1, "kind": "", "key": "velo", "value": "Un vélo rouge"}]

    assert plan.counts_text() == "0 échange(s), 1 fait(s) et 0 résumé(s)"
    assert "- fait velo : Un vélo rouge" in plan.as_text(owner=True)
