"""The forgets a forced restore carries over (memory.services.backup_forgets): read from
the memory being replaced, they take the same rows again once those are back in memory
(as the backup holds them), every kind a forget takes: exchanges, facts, summaries and
the history lines of the facts it leaves."""

from __future__ import annotations

import pytest

from memory.models import Fact, FactRevision, Forgetting, ForgettingState, Message, Summary
from memory.services.backup import database_path
from memory.services.backup_forgets import forgets_read, forgets_replay
from memory.services.erased_marks import fact_mark
from memory.services.facts import fact_store, fact_update
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.stores.fts import fts_search
from tests.memory.world import exchange_save, index_everything

# forgets_read opens the database file: what it reads must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def _seen() -> tuple[int, int, int, int, int]:
    return (
        Message.objects.filter(content__contains="garage").count(),
        Fact.objects.filter(key="code_garage").count(),
        Summary.objects.filter(content__contains="garage").count(),
        FactRevision.objects.filter(fact__key="velo", old_value__contains="garage").count(),
        len(fts_search("garage")),
    )


def test_a_carried_forget_takes_every_kind_of_row_again_under_the_same_deadline(
    vector_store, local_embedder
):
    exchange_save("whatsapp", "Le code du garage est B4242Z", "Noté.")
    fact_store(key="code_garage", value="Le code du garage est B4242Z")
    velo = fact_store(key="velo", value="Le vélo est rangé à côté du code du garage")[0]
    fact_update(fact=velo, actor="user", value="Le vélo est gris")
    Summary.objects.create(channel="whatsapp", content="On a noté le code du garage.")
    index_everything()
    before = _seen()
    forgot = topic_forget(topic="code garage", actor="user")
    assert _seen() == (0, 0, 0, 0, 0)
    carried = forgets_read(database_path())
    # The rows back in memory and the forget gone from it, as the backup holds them.
    forgetting_restore(forgetting_id=forgot.forgetting_id, actor="user")
    assert _seen() == before == (1, 1, 1, 1, 1)

    done = forgets_replay(carried)

    assert done == {"forgets": 1, "facts": 1, "messages": 2, "summaries": 1}
    assert _seen() == (0, 0, 0, 0, 0)
    again = Forgetting.objects.get(state=ForgettingState.ACTIVE)
    assert (again.topic, again.actor, again.purge_after) == (
        "code garage",
        "user",
        forgot.purge_after,
    )
    assert forgets_replay(forgets_read(database_path())) == dict.fromkeys(done, 0)  # once


def test_a_fact_forgotten_alone_is_carried_with_who_forgot_it_and_an_expired_one_is_not():
    """The TTL's purge marks a fact forgotten too (its line EXPIRED): the restored copy has
    the same expiry and the purge takes it again, so only the owner's (or the agent's)
    forget of one fact is carried, with its actor and date."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.expiry import expired_purge
    from memory.services.facts import fact_forget

    secret = fact_store(key="code_portail", value="Le code du portail est 7719")[0]
    fact_forget(fact=secret, actor="agent")
    fact_store(key="voyage", value="En voyage à Rome", ttl="1d")
    expired_purge(now=timezone.now() + timedelta(days=2))
    assert Fact.all_objects.get(key="voyage").forgotten

    carried = forgets_read(database_path())

    assert [(c.alone, c.actor, c.facts) for c in carried] == [
        (True, "agent", {fact_mark("code_portail", "Le code du portail est 7719")})
    ]
    secret.refresh_from_db()
    assert carried[0].created_at == secret.forgotten_at
