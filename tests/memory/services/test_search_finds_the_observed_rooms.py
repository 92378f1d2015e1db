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
