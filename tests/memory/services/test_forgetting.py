"""topic_forget: exactly the topic leaves both tiers, and no search path brings it back."""

from __future__ import annotations

import pytest

from memory.exceptions import MemoryServiceError, StoreUnavailable
from memory.models import Fact, FactRevision, Message, RevisionReason, Summary
from memory.services.facts import fact_store
from memory.services.forgetting import TOPIC_TOO_VAGUE_MESSAGE, topic_forget, topic_terms
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, KIND_SUMMARY, index_rows
from memory.services.messages import message_save
from memory.services.search import memory_search
from memory.stores.fts import fts_search
from memory.stores.vectors import CONVERSATIONS, KNOWLEDGE

pytestmark = pytest.mark.django_db

MARIE_EXCHANGES = [
    ("whatsapp", "Marie m'a invité à dîner samedi soir", "Super, amuse-toi bien !"),
    ("mission_control", "J'ai dîné avec Marie hier, c'était sympa", "Content pour toi."),
]
OTHER_EXCHANGES = [
    ("whatsapp", "Le vol pour Lisbonne part à 7h40 le 12 mars", "Noté pour Lisbonne."),
    ("whatsapp", "Je me suis fait mal à l'épaule en escalade", "Repose ton épaule."),
    ("mission_control", "La réunion sur le projet Makilab est décalée à jeudi", "D'accord."),
]


def _exchange(channel, user, reply):
    question = message_save(channel=channel, role="user", content=user)
    message_save(channel=channel, role="assistant", content=reply, reply_to_id=question.id)
    return question


def _reindex_everything():
    """What `manage.py reindex` does: every T1 row through the indexing service."""
    index_rows(KIND_MESSAGE, list(Message.objects.values_list("id", flat=True)))
    index_rows(KIND_FACT, list(Fact.objects.values_list("id", flat=True)))
    index_rows(KIND_SUMMARY, list(Summary.objects.values_list("id", flat=True)))


@pytest.fixture
def world(vector_store, local_embedder):
    marie = [_exchange(*e) for e in MARIE_EXCHANGES]
    others = [_exchange(*e) for e in OTHER_EXCHANGES]
    fact_store(key="amie_marie", value="Marie est une amie d'enfance, elle habite à Lyon")
    fact_store(key="vol_lisbonne", value="Vol pour Lisbonne le 12 mars à 7h40")
    fact_store(key="user_name", value="Mickael", memory_type="identity")
    Summary.objects.create(
        channel="whatsapp", content="Sur whatsapp : le dîner chez Marie et ses enfants."
    )
    Summary.objects.create(channel="whatsapp", content="Sur whatsapp : préparation du marathon.")
    _reindex_everything()
    return {"store": vector_store, "marie": marie, "others": others}


def _mentions_marie(hits) -> list:
    return [hit for hit in hits if "marie" in (hit.excerpt + hit.key).lower()]


def test_it_removes_the_topic_from_both_tiers_and_reports_it(world):
    store = world["store"]
    points_before = store.count(CONVERSATIONS) + store.count(KNOWLEDGE)

    result = topic_forget(topic="Marie")

    assert sorted(e["id"] for e in result.exchanges) == sorted(m.id for m in world["marie"])
    assert result.messages_deleted == 4
    assert [f["key"] for f in result.facts] == ["amie_marie"]
    assert len(result.summaries) == 1
    # 2 exchanges + 1 fact + 1 summary.
    assert result.points_removed == 4
    assert store.count(CONVERSATIONS) + store.count(KNOWLEDGE) == points_before - 4
    assert "amie_marie" in result.as_text()


def test_nothing_else_is_touched(world):
    topic_forget(topic="Marie")

    assert Message.objects.count() == 2 * len(OTHER_EXCHANGES)
    assert set(Message.objects.filter(role="user").values_list("content", flat=True)) == {
        e[1] for e in OTHER_EXCHANGES
    }
    assert set(Fact.objects.filter(forgotten=False).values_list("key", flat=True)) == {
        "vol_lisbonne",
        "user_name",
    }
    assert Summary.objects.get().content.endswith("marathon.")
    assert world["store"].count(CONVERSATIONS) == len(OTHER_EXCHANGES)
    # The others are still found, by words and by meaning.
    assert fts_search("Lisbonne")
    semantic = memory_search(query="le vol pour Lisbonne", mode="semantic", limit=10)
    assert any(
        hit.kind == "exchange" and hit.excerpt.startswith("Le vol pour Lisbonne")
        for hit in semantic[:3]
    )


def test_forgotten_content_comes_back_through_no_search_path(world):
    topic_forget(topic="Marie")
    _reindex_everything()  # even a full rebuild of Qdrant from T1

    assert fts_search("Marie") == []
    assert memory_search(query="Marie", mode="text", limit=20) == []
    assert _mentions_marie(memory_search(query="Marie", mode="semantic", limit=20)) == []
    assert _mentions_marie(memory_search(query="dîner avec Marie", mode="semantic", limit=20)) == []
    try:
        from memory.services.retrieval import auto_retrieve
    except ImportError:
        pytest.skip("memory.services.retrieval.auto_retrieve not available yet")
    retrieved = auto_retrieve(message="Tu te souviens du dîner avec Marie ?", channel="whatsapp")
    assert retrieved is not None
    assert "marie" not in retrieved.prompt_block.lower().replace(
        "tu te souviens du dîner avec marie", ""
    )
    assert not [m for m in retrieved.memories if "marie" in str(m.get("text", "")).lower()]


def test_the_forgotten_fact_keeps_its_history_and_can_be_restored(world):
    topic_forget(topic="Marie", actor="user")

    fact = Fact.objects.get(key="amie_marie")
    assert fact.forgotten
    revision = fact.revisions.first()
    assert revision.reason == RevisionReason.FORGOTTEN
    assert revision.actor == "user"
    assert "Marie" in revision.note
    assert FactRevision.objects.filter(fact=fact).count() == 2


def test_the_message_asking_to_forget_is_kept(world):
    request = message_save(
        channel="mission_control", role="user", content="Oublie tout ce qui concerne Marie"
    )

    result = topic_forget(topic="Marie", keep_message_ids=[request.id])

    assert Message.objects.filter(pk=request.id).exists()
    assert request.id not in [e["id"] for e in result.exchanges]
    assert result.messages_deleted == 4


def test_a_topic_matches_by_meaning_only_with_a_shared_word_on_the_local_embedder(world):
    """e5 scores unrelated French high: "Lisbonne" must not take Toulouse or Makilab along."""
    result = topic_forget(topic="le voyage à Lisbonne")

    assert [e["id"] for e in result.exchanges] == [world["others"][0].id]
    assert [f["key"] for f in result.facts] == ["vol_lisbonne"]
    assert Message.objects.filter(content__contains="Makilab").exists()


def test_the_wrapping_words_of_a_topic_are_ignored():
    assert topic_terms("tout ce qui concerne Marie") == ["marie"]
    assert topic_terms("ma blessure à l'Épaule") == ["blessure", "epaule"]


@pytest.mark.parametrize("topic", ["", "   "])
def test_an_empty_topic_is_refused(topic):
    with pytest.raises(MemoryServiceError):
        topic_forget(topic=topic)


def test_a_vague_topic_is_refused_rather_than_forgetting_everything():
    with pytest.raises(MemoryServiceError) as caught:
        topic_forget(topic="tout ce qui concerne ça")
    assert str(caught.value) == TOPIC_TOO_VAGUE_MESSAGE.format(topic="tout ce qui concerne ça")


def test_nothing_changes_when_the_vector_store_is_unreachable(world, settings):
    from memory.stores.vectors import vector_store_reset

    vector_store_reset()
    settings.QDRANT_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    settings.QDRANT_TIMEOUT_S = 1

    with pytest.raises(StoreUnavailable) as caught:
        topic_forget(topic="Marie")

    assert "Rien n'a été supprimé" in str(caught.value)
    assert Message.objects.count() == 2 * (len(MARIE_EXCHANGES) + len(OTHER_EXCHANGES))
    assert not Fact.objects.get(key="amie_marie").forgotten
    assert Summary.objects.count() == 2
    vector_store_reset()
