"""The agent's expiry, stated during a topic forget, survives its undo (QA 3). The undo gives the key back to the restored fact and turns the
agent's statement made meanwhile into « a restatement of it » (forgetting_restated.key_back)
— but only its value and subjects are restated: the expiry the agent gave (a temporary
state, « ttl 2d ») is dropped with the holder row, and the restored fact lives for good.

README: « restating a fact changes only what the restatement states … a TTL counts from
now, so a statement made again with one renews its expiry »; nothing the agent stated
should be lost by an undo."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Fact
from memory.services.dedup import fact_remember
from memory.services.expiry import expired_purge
from memory.services.facts import fact_store
from memory.services.forgetting import forgetting_restore, topic_forget

pytestmark = pytest.mark.django_db


def test_the_agents_expiry_stated_during_the_forget_survives_the_undo(settings):
    settings.ANTHROPIC_API_KEY = ""
    fact_store(key="statut_paulo", value="Paulo est à Lisbonne", actor=Actor.AGENT)
    forgetting_id = topic_forget(topic="Paulo Lisbonne", actor=Actor.USER).forgetting_id
    assert forgetting_id

    # Meanwhile the agent states the key again (news), a temporary state with a TTL.
    stated = fact_remember(
        key="statut_paulo",
        value="Paulo est à Porto jusqu'à jeudi",
        ttl="2d",
        source="tool",
        actor=Actor.AGENT,
    ).fact
    assert stated.expires_at is not None

    forgetting_restore(forgetting_id=forgetting_id, actor=Actor.USER)

    fact = Fact.objects.get(key="statut_paulo")
    assert fact.value == "Paulo est à Porto jusqu'à jeudi"  # the agent's news is kept
    assert fact.expires_at is not None, "the agent's 2-day expiry was dropped by the undo"


def _forget_then_temporary_restatement_run_out() -> int:
    fact_store(key="statut_paulo", value="Paulo est à Lisbonne", actor=Actor.AGENT)
    forgetting_id = topic_forget(topic="Paulo Lisbonne", actor=Actor.USER).forgetting_id
    assert forgetting_id
    stated = fact_remember(
        key="statut_paulo",
        value="Paulo est à Porto pour une heure",
        ttl="1h",
        source="tool",
        actor=Actor.AGENT,
    ).fact
    # An hour later: the agent's temporary state ran out.
    Fact.all_objects.filter(pk=stated.pk).update(expires_at=timezone.now() - timedelta(minutes=2))
    return forgetting_id


@pytest.mark.parametrize("purge_first", [True, False], ids=["purge-ran-first", "purge-not-yet"])
def test_the_undo_gives_the_fact_back_live_whether_the_purge_ran_or_not(settings, purge_first):
    settings.ANTHROPIC_API_KEY = ""
    forgetting_id = _forget_then_temporary_restatement_run_out()
    if purge_first:
        expired_purge()

    forgetting_restore(forgetting_id=forgetting_id, actor=Actor.USER)

    live = [
        (f.key, f.value, f.expires_at)
        for f in Fact.objects.filter(forgotten=False)
        if not f.is_expired
    ]
    assert any(key == "statut_paulo" for key, _, _ in live), list(
        Fact.all_objects.values_list("key", "value", "forgotten", "expires_at")
    )
