"""Erasing a forget redacts its topic where an undone forget of the same topic kept it.

QA: « opération du genou » was forgotten and undone twice, then forgotten and erased:
the erased forget said « [sujet effacé] », while the two undone ones still listed
« opération du genou » on GET /forgettings, /memory and the admin, a backup restore
included. An undone forget of the same topic (its words, however typed) is redacted
with it; another topic's is not, nor a forget still undoable.
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Forgetting
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import PURGED_TOPIC, forgetting_restore, topic_forget
from tests.memory.world import exchange_save

pytestmark = pytest.mark.django_db


def _forget(topic: str) -> int:
    return topic_forget(topic=topic, actor=Actor.USER).forgetting_id


def test_the_undone_forgets_of_the_topic_lose_it_too():
    exchange_save("whatsapp", "Mon opération du genou est le 12 mars.", "Bon courage.")
    exchange_save("whatsapp", "Le vélo est chez le réparateur.", "Noté.")
    first = _forget("opération du genou")
    forgetting_restore(forgetting_id=first, actor=Actor.USER)
    second = _forget("Opération du GENOU")
    forgetting_restore(forgetting_id=second, actor=Actor.USER)
    other = _forget("vélo réparateur")
    forgetting_restore(forgetting_id=other, actor=Actor.USER)
    last = _forget("opération du genou")

    forgetting_erase(forgetting_id=last, actor=Actor.USER)

    topics = dict(Forgetting.objects.values_list("id", "topic"))
    assert topics[last] == topics[first] == topics[second] == PURGED_TOPIC
    assert topics[other] == "vélo réparateur"


@pytest.mark.parametrize("undone_topic", ["opérations du genou", "opération du genou de maman"])
def test_an_undone_forget_of_the_topic_typed_otherwise_loses_it_too(undone_topic):
    """Review: only the very same words were redacted, not a plural or a longer topic."""
    exchange_save("whatsapp", "Mon opération du genou est le 12 mars, maman viendra.", "Courage.")
    first = _forget(undone_topic)
    forgetting_restore(forgetting_id=first, actor=Actor.USER)
    last = _forget("opération du genou")

    forgetting_erase(forgetting_id=last, actor=Actor.USER)

    assert Forgetting.objects.get(pk=first).topic == PURGED_TOPIC
