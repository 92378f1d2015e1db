"""The on-demand search finds an observed room's messages by meaning too.

Found while checking the last sessions' notes: a message of an observed room (its point
in `live`) was found by the text mode, but the semantic mode searched the exchanges and
the knowledge only, and the hybrid mode ranks what the pre-hook fuses, which leaves the
rooms out: « barbecue chez Paulette » answered the unrelated « vélo » exchange in both.
"""

from __future__ import annotations

import pytest

from memory.models import Actor
from memory.services.channels import channel_settings_set
from memory.services.forgetting import topic_forget
from memory.services.messages import message_save
from memory.services.search import memory_search
from tests.memory.world import exchange_save, index_everything

pytestmark = pytest.mark.django_db

SAID = "Le barbecue chez Paulette aura lieu samedi au bord du lac"


@pytest.fixture
def rooms(vector_store, local_embedder):
    channel_settings_set(channel="famille", observed=True)
    said = message_save(channel="famille", role="user", content=SAID, author="Tonton")
    exchange_save("whatsapp", "Le vélo est chez le réparateur", "Noté.")
    index_everything()
    return said


@pytest.mark.parametrize("mode", ["semantic", "hybrid", "text"])
def test_a_rooms_message_is_found_in_every_mode(rooms, mode):
    hits = memory_search(query="barbecue chez Paulette", mode=mode)

    assert hits and hits[0].id == str(rooms.id), [(h.id, h.excerpt) for h in hits]
    assert hits[0].channel == "famille"


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_forgotten_rooms_message_is_not(rooms, mode):
    topic_forget(topic="barbecue Paulette", actor=Actor.USER)

    hits = memory_search(query="barbecue chez Paulette", mode=mode)

    assert str(rooms.id) not in [h.id for h in hits]


def test_a_room_goes_before_the_first_hit_found_less_close_and_a_words_hit_keeps_its_place():
    """Review: the placement rule was checked at the head only."""
    from memory.services.search_hits import SearchHit
    from memory.services.search_semantic import rooms_placed

    def hit(kind, id_, source, score=0.0):
        return SearchHit(
            id=id_,
            kind=kind,
            score=score,
            channel="c",
            date=None,
            excerpt="",
            type="",
            source=source,
        )

    words_only = hit("fact", "1", "hybrid")  # found by its words alone: no closeness
    close = hit("exchange", "2", "hybrid")
    far = hit("exchange", "3", "hybrid")
    room = hit("exchange", "9", "live", score=0.7)
    closeness = {("exchange", "2"): 0.8, ("exchange", "3"): 0.4, ("exchange", "9"): 0.7}

    placed = rooms_placed([words_only, close, far], [room], closeness)

    assert [h.id for h in placed] == ["1", "2", "9", "3"]
