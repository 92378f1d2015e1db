"""Observed rooms: what a room says is kept, embedded in `live`, and injected elsewhere."""

from __future__ import annotations

import pytest

from agent.loop import handle_message
from memory.models import IndexState, MemoryRetrieval, Message
from memory.services.channels import channel_settings_set
from memory.services.formatting import LIVE_TITLE
from memory.services.indexing import KIND_MESSAGE, index_rows
from memory.stores.vectors import CONVERSATIONS, LIVE, point_id
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

ROOM = "lobby"


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    from memory.services.retrieval import retrieval_warm

    settings.AGENT_COALESCE_SECONDS = 0
    retrieval_warm()  # as serve does at start: the first message is not lost to a cold model
    channel_settings_set(channel=ROOM, observed=True)
    return fake_anthropic


def room_says(text: str, author: str = "david") -> Message:
    """A message of the observed room, through the agent loop, indexed by the eager worker."""
    result = handle_message(channel=ROOM, text=text, author=author)
    assert result.reply == "" and result.reply_id is None
    return Message.objects.get(pk=result.message_ids[0])


def test_a_room_message_is_stored_unanswered_and_gets_one_live_point(
    world, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        message = room_says("Je pars en Grèce demain pour une semaine")

    message.refresh_from_db()
    assert message.observed is True
    assert message.index_state == IndexState.INDEXED
    assert world.message_requests == []  # the agent does not answer in an observed room
    [point] = vector_store_points(LIVE, message.id)
    assert point.payload["author"] == "david"
    assert point.payload["room"] == ROOM
    assert point.payload["timestamp"] == message.created_at.isoformat()
    assert point.payload["version"] == message.version
    assert vector_store_points(CONVERSATIONS, message.id) == []


def vector_store_points(collection, message_id):
    from memory.stores.vectors import get_vector_store

    return get_vector_store().retrieve(collection, [point_id(KIND_MESSAGE, message_id)])


def test_a_fact_said_in_a_room_is_injected_on_another_channel_within_the_minute(
    world, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        said = room_says("Je pars en Grèce demain pour une semaine")
        room_says("ok")
        room_says("lol")
    world.script(text_message("David part en Grèce demain."))

    result = handle_message(channel="whatsapp", text="Où part David en vacances ?")

    system = world.last.system
    assert LIVE_TITLE in system
    assert "david · lobby · " in system
    assert "Je pars en Grèce demain pour une semaine" in system
    [extract] = result.retrieval.live
    assert extract["id"] == f"message:{said.id}"
    row = MemoryRetrieval.objects.get(pk=result.retrieval_id)
    assert [m["kind"] for m in row.memories if m["id"] == f"message:{said.id}"] == ["live"]


def test_small_talk_of_a_room_is_never_injected(
    world, eager_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        chatter = [room_says(t) for t in ("ok", "lol", "👍", "mdr")]
    world.script(text_message("Je ne sais pas."), text_message("Rien."))

    result = handle_message(channel="whatsapp", text="Quoi de neuf dans le salon ?")
    again = handle_message(channel="whatsapp", text="ok")

    for message in chatter:
        message.refresh_from_db()
        assert message.index_state == IndexState.INDEXED  # indexed as "no point"
        assert vector_store_points(LIVE, message.id) == []
    assert result.retrieval.live == [] and LIVE_TITLE not in world.message_requests[0].system
    assert again.retrieval is None or again.retrieval.live == []


def test_the_room_being_answered_is_not_its_own_extract(world):
    message = Message.objects.create(channel="whatsapp", role="user", content="x")
    said = Message.objects.create(
        channel="whatsapp", role="user", observed=True, content="Je pars en Grèce demain"
    )
    index_rows(KIND_MESSAGE, [said.id, message.id])
    from memory.services.retrieval import auto_retrieve_preview

    result = auto_retrieve_preview(message="Où part-il en Grèce ?", channel="whatsapp")
    assert result.live == []
    other = auto_retrieve_preview(message="Où part-il en Grèce ?", channel="mission_control")
    assert [i["id"] for i in other.live] == [f"message:{said.id}"]


def test_doctor_and_reindex_know_the_live_collection(world):
    from memory.services.maintenance import memory_doctor, reindex
    from memory.stores.vectors import get_vector_store

    said = message_save_in_room("Je pars en Grèce demain pour une semaine")
    exchange = Message.objects.create(channel="whatsapp", role="user", content="Bonjour Paul")
    index_rows(KIND_MESSAGE, [said.id, exchange.id])
    reports = {r.collection: r for r in memory_doctor()}
    assert all(r.healthy for r in reports.values()), reports

    get_vector_store().delete(LIVE, [point_id(KIND_MESSAGE, said.id)])
    report = {r.collection: r for r in memory_doctor(fix=True)}["live"]
    assert report.missing == [said.id] and report.fixed
    assert vector_store_points(LIVE, said.id)

    get_vector_store().drop_collection(LIVE)
    reindex(collection="live")
    assert vector_store_points(LIVE, said.id) and vector_store_points(CONVERSATIONS, said.id) == []
    assert all(r.healthy for r in memory_doctor())


def message_save_in_room(text: str) -> Message:
    from memory.services.messages import message_save

    return message_save(channel=ROOM, role="user", author="david", content=text)


def test_live_down_is_skipped_and_recorded_and_the_agent_still_answers(world, monkeypatch):
    from memory.exceptions import StoreUnavailable
    from memory.stores import vectors

    said = message_save_in_room("Je pars en Grèce demain pour une semaine")
    index_rows(KIND_MESSAGE, [said.id])

    class Down:
        def __getattr__(self, name):
            def down(*args, **kwargs):
                raise StoreUnavailable("Qdrant est injoignable.")

            return down

    monkeypatch.setattr(vectors, "get_vector_store", lambda: Down())
    world.script(text_message("Je ne sais pas."))

    result = handle_message(channel="whatsapp", text="Où part David en vacances ?")

    assert result.reply == "Je ne sais pas."
    assert result.retrieval.failed_sources["live"] == "Qdrant est injoignable."
    row = MemoryRetrieval.objects.get(pk=result.retrieval_id)
    assert "live" in row.failed_sources and LIVE_TITLE not in world.last.system


def test_the_live_gate_keeps_a_hit_clear_of_the_background_or_sharing_a_word(monkeypatch):
    """Each live hit passes alone: far enough above the query's background closeness, or
    sharing a content word (the author's name included) with the message. A hit close to
    the background that shares nothing, or from the room being answered, is dropped."""
    from concurrent.futures import Future

    import memory.services.relevance as relevance
    import memory.stores.vectors as vectors
    from memory.services.retrieval.live import live_search
    from memory.stores.embedders import LocalEmbedder
    from memory.stores.vectors import VectorHit

    embedder = LocalEmbedder()
    background = 0.80
    near = background + embedder.gate_margin / 2  # above the threshold, below the margin
    clear = background + 2 * embedder.gate_margin

    def hit(message_id: int, score: float, author: str, content: str, room: str = "salon"):
        payload = {"room": room, "message_id": message_id, "author": author, "content": content}
        return VectorHit(str(message_id), score, payload)

    hits = [
        hit(1, clear, "eve", "Rien en commun"),
        hit(2, near, "eve", "Le concert de jazz"),
        hit(3, near, "eve", "La météo de demain"),
        hit(4, near, "david", "Rien non plus"),
        hit(5, clear, "eve", "jazz", room=ROOM),
    ]

    class Store:
        def search(self, name, vector, **kwargs):
            assert name == LIVE
            return hits

    monkeypatch.setattr(vectors, "get_vector_store", Store)
    monkeypatch.setattr(relevance, "query_background", lambda embedder, vector: background)
    ready: Future = Future()
    ready.set_result(([0.0] * embedder.dimension, embedder))

    found = live_search(
        ready,
        query_words={"jazz", "david"},
        exclude_room=ROOM,
        limit=10,
        min_score=0.0,
        wait_s=1,
    )

    assert [message_id for message_id, _ in found["hits"]] == [1, 2, 4]


def test_one_pre_hook_gates_its_semantic_and_live_hits_on_one_background(
    world, eager_tasks, django_capture_on_commit_callbacks, monkeypatch
):
    """The query's background (its closeness to unrelated text) is computed once per
    query vector, though both the semantic and the live source gate on it, each in its
    own thread; another query gets its own."""
    import memory.services.relevance as relevance
    from memory.services.facts import fact_store
    from memory.services.retrieval import auto_retrieve

    with django_capture_on_commit_callbacks(execute=True):
        said = room_says("Je pars en Grèce demain pour une semaine")
        fact_store(key="vacances_david", value="David passe ses vacances en Grèce")
    reference = relevance._reference_matrix
    products = []

    def counted(embedder):
        products.append(embedder)
        return reference(embedder)

    monkeypatch.setattr(relevance, "_reference_matrix", counted)

    result = auto_retrieve(message="Où part David en vacances ?", channel="whatsapp")

    assert [extract["id"] for extract in result.live] == [f"message:{said.id}"]
    assert any(m["id"].startswith("fact:") for m in result.memories)  # the semantic source too
    assert len(products) == 1
    auto_retrieve(message="Qui part en Grèce demain ?", channel="whatsapp")
    assert len(products) == 2
