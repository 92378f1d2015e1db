"""An expired fact stated again comes back the same way whether the ten-minute purge reached
it first or not, and an expiry is never taken for the owner's forget."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import Actor, Fact, FactKind
from memory.selectors import facts_active
from memory.services.dedup import fact_remember
from memory.services.expiry import expired_purge
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.self_memory import agent_item_forget, agent_item_store

pytestmark = pytest.mark.django_db

PURGED_FIRST = pytest.mark.parametrize("purged_first", [False, True], ids=["unpurged", "purged"])


def _expire(fact: Fact, *, purged_first: bool = False) -> None:
    Fact.all_objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    if purged_first:
        assert expired_purge() == 1


@PURGED_FIRST
def test_the_agent_restating_an_expired_fact_brings_it_back_purged_or_not(purged_first):
    fact, _ = fact_store(key="mood", value="fatigué", ttl="1h", actor=Actor.AGENT)
    _expire(fact, purged_first=purged_first)

    result = fact_remember(key="mood", value="fatigué", actor=Actor.AGENT)
    expired_purge()

    assert result.action == "updated"
    back = facts_active().get(pk=fact.pk)
    assert back.expires_at is None
    assert back.revisions.first().changes["expires_at"][1] is None  # the history says so


def test_a_new_value_the_agent_gives_an_expired_unpurged_fact_is_kept():
    fact, _ = fact_store(key="rdv", value="RDV dentiste mardi", ttl="1d", actor=Actor.AGENT)
    _expire(fact)

    fact_remember(key="rdv", value="RDV dentiste jeudi", actor=Actor.AGENT)
    expired_purge()

    assert facts_active().filter(pk=fact.pk, value="RDV dentiste jeudi").exists()


def test_the_owner_restating_an_expired_unpurged_fact_brings_it_back(owner_api):
    response = owner_api.post(
        "/api/memory/facts",
        {"key": "parking", "value": "Garé niveau -2", "ttl": "1h"},
        format="json",
    )
    assert response.status_code == 201, response.content
    _expire(Fact.objects.get(key="parking"))

    response = owner_api.post(
        "/api/memory/facts", {"key": "parking", "value": "Garé niveau -2"}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["is_expired"] is False, response.json()


@PURGED_FIRST
def test_the_agent_does_not_bring_an_expired_fact_back_past_the_expiry_the_owner_set(
    purged_first,
):
    fact, _ = fact_store(key="parking", value="Garé niveau -2", ttl="1h", actor=Actor.USER)
    _expire(fact, purged_first=purged_first)

    fact_remember(key="parking", value="Garé niveau -2", actor=Actor.AGENT)
    expired_purge()

    assert not facts_active().filter(pk=fact.pk).exists()


@PURGED_FIRST
def test_the_agent_restating_an_expired_self_item_brings_it_back_purged_or_not(purged_first):
    item = agent_item_store(
        kind=FactKind.SELF, category="context", content="Je suis en vacances", use_llm=False
    ).item
    fact_update(fact=item, actor=Actor.AGENT, ttl="1d")
    _expire(item, purged_first=purged_first)

    result = agent_item_store(
        kind=FactKind.SELF, category="context", content="Je suis en vacances", use_llm=False
    )
    expired_purge()

    assert (result.item.pk, result.action) == (item.pk, "updated")
    assert facts_active(kind=FactKind.SELF).filter(pk=item.pk).exists()


def test_a_fact_expired_after_the_owner_forgot_and_restored_it_comes_back_not_aside():
    """Forgotten by its expiry, not by the owner: the agent's statement brings it back with
    its history and the owner's settings; it is not set aside as a fact the owner forgot."""
    fact, _ = fact_store(key="mood", value="fatigué", ttl="1d", actor=Actor.AGENT)
    fact_forget(fact=fact, actor=Actor.USER)
    fact_restore(fact=fact, actor=Actor.USER)
    fact_update(fact=fact, actor=Actor.USER, importance=0.9)
    _expire(fact, purged_first=True)

    fact_remember(key="mood", value="fatigué", actor=Actor.AGENT)

    assert list(Fact.all_objects.values_list("key", flat=True)) == ["mood"]
    back = Fact.objects.get(key="mood")
    assert (back.pk, back.importance) == (fact.pk, 0.9)


def test_the_agent_deleting_a_self_item_expired_after_an_owner_restore_hears_it_is_gone():
    """The agent's delete of an item the owner deleted answers as for an unknown id; one
    whose expiry ran out since the owner restored it is only already deleted."""
    item = agent_item_store(
        kind=FactKind.GOAL, category="connection", content="Parler à David", use_llm=False
    ).item
    fact_forget(fact=item, actor=Actor.USER)
    fact_restore(fact=item, actor=Actor.USER)
    fact_update(fact=item, actor=Actor.AGENT, ttl="1h")
    _expire(item, purged_first=True)

    again, deleted = agent_item_forget(
        kind=FactKind.GOAL, item_id=item.pk, reason="atteint", actor=Actor.AGENT
    )

    assert (again.pk, deleted) == (item.pk, False)
    fact_restore(fact=item, actor=Actor.USER)
    fact_forget(fact=item, actor=Actor.USER)
    with pytest.raises(MemoryServiceError, match="Aucun souvenir"):
        agent_item_forget(kind=FactKind.GOAL, item_id=item.pk, reason="atteint", actor=Actor.AGENT)


@PURGED_FIRST
def test_the_agents_news_on_a_fact_whose_owner_given_expiry_ran_out_is_kept(purged_first):
    """The owner's words and expiry ran out together; the agent's new value is news, not
    the owner's words brought back past their expiry (QA 7b: it was stored nowhere)."""
    fact, _ = fact_store(key="rdv_dentiste", value="Mardi 10h", actor=Actor.USER, ttl="1d")
    assert {"value", "expires_at"} <= set(fact.owner_fields)
    _expire(fact, purged_first=purged_first)

    fact_store(key="rdv_dentiste", value="Jeudi 15h", actor=Actor.AGENT, ttl="7d")
    expired_purge()

    back = facts_active().get(key="rdv_dentiste")
    assert back.value == "Jeudi 15h"
    assert (
        timezone.now() + timedelta(days=6) < back.expires_at <= timezone.now() + timedelta(days=7)
    )
    assert "value" not in back.owner_fields and "expires_at" not in back.owner_fields


@PURGED_FIRST
def test_the_agents_news_after_an_expiry_the_owner_gave_its_own_fact_is_kept(purged_first):
    """QA 9b: the owner set only the expiry of the agent's fact (the value stayed the
    agent's); once it ran out, the agent's news on the key was stored nowhere."""
    fact, _ = fact_store(key="hotel", value="Séjourne à l'hôtel Ibis", actor=Actor.AGENT)
    fact_update(fact=fact, actor=Actor.USER, ttl="1d")
    fact.refresh_from_db()
    assert "expires_at" in fact.owner_fields and "value" not in fact.owner_fields
    _expire(fact, purged_first=purged_first)

    fact_store(key="hotel", value="Séjourne au Novotel", actor=Actor.AGENT)
    expired_purge()

    back = facts_active().get(key="hotel")
    assert back.value == "Séjourne au Novotel" and back.expires_at is None
    assert "expires_at" not in back.owner_fields


@PURGED_FIRST
def test_the_same_agent_words_stay_expired_past_the_expiry_the_owner_gave(purged_first):
    """The other side: what ran out at the owner's date does not come back as it was."""
    fact, _ = fact_store(key="hotel", value="Séjourne à l'hôtel Ibis", actor=Actor.AGENT)
    fact_update(fact=fact, actor=Actor.USER, ttl="1d")
    _expire(Fact.all_objects.get(pk=fact.pk), purged_first=purged_first)

    fact_store(key="hotel", value="Séjourne à l'hôtel Ibis", actor=Actor.AGENT)
    expired_purge()

    assert not facts_active().filter(key="hotel").exists()
