"""A fact given back (a topic forget's undo, a restore) takes its key back from a fact the
owner forgot one by one since, which waits aside under its own id (QA).

« sport » taken by a topic forget, the owner's new « sport » stated and then forgotten
too, the undo left the restored fact under « sport (oubli n° 1) » although no live fact
held « sport »; the agent's next statement of « sport » then started a second live fact
beside it, and the owner could not rename it back (the forgotten one held the key).
"""

from __future__ import annotations

import pytest

from memory.models import Actor, Fact
from memory.services.dedup import fact_remember
from memory.services.facts import fact_forget, fact_restore, fact_store
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.services.forgetting_restated import FACT_ASIDE_KEY, aside_key

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_llm(settings):
    settings.ANTHROPIC_API_KEY = ""


def _live() -> list[str]:
    return sorted(Fact.objects.filter(forgotten=False).values_list("key", flat=True))


def test_a_topic_undo_takes_its_key_back_from_a_fact_forgotten_since():
    old, _ = fact_store(key="sport", value="Je fais du vélo de montagne le dimanche")
    forgetting = topic_forget(topic="vélo de montagne", actor=Actor.USER)
    new, _ = fact_store(key="sport", value="Je nage le mardi", actor=Actor.USER)
    fact_forget(fact=new, actor=Actor.USER)

    forgetting_restore(forgetting_id=forgetting.forgetting_id, actor=Actor.USER)

    assert Fact.all_objects.get(pk=old.pk).key == "sport"
    waiting = Fact.all_objects.get(pk=new.pk)
    assert waiting.forgotten and waiting.key == aside_key("sport", new.pk, FACT_ASIDE_KEY)
    assert _live() == ["sport"]
    # The agent's next statement lands on the fact given back, not beside it.
    fact_remember(key="sport", value="Je fais du vélo de montagne le samedi", actor=Actor.AGENT)
    assert _live() == ["sport"]
    # The one forgotten since, restored, is visible beside it under its own key.
    fact_restore(fact=waiting, actor=Actor.USER)
    assert _live() == sorted(["sport", waiting.key])


def test_a_restore_takes_its_key_back_from_a_fact_forgotten_since():
    old, _ = fact_store(key="sport", value="Je fais du vélo de montagne le dimanche")
    fact_forget(fact=old, actor=Actor.USER)
    # The agent states the key: the forgotten fact waits aside under its own id.
    new, _ = fact_store(key="sport", value="Je nage le mardi", actor=Actor.AGENT)
    assert Fact.all_objects.get(pk=old.pk).key == aside_key("sport", old.pk, FACT_ASIDE_KEY)
    fact_forget(fact=new, actor=Actor.USER)

    restored = fact_restore(fact=Fact.all_objects.get(pk=old.pk), actor=Actor.USER)

    assert restored.key == "sport" and Fact.all_objects.get(pk=old.pk).key == "sport"
    waiting = Fact.all_objects.get(pk=new.pk)
    assert waiting.forgotten and waiting.key == aside_key("sport", new.pk, FACT_ASIDE_KEY)
    assert _live() == ["sport"]
