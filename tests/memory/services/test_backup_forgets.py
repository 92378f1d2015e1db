"""The forgets a forced restore carries over (memory.services.backup_forgets): read from
the memory being replaced, they take the same rows again once those are back in memory
(as the backup holds them), every kind a forget takes: exchanges, facts, summaries and
the history lines of the facts it leaves."""

from __future__ import annotations

import pytest

from memory.models import Fact, FactRevision, Forgetting, ForgettingState, Message, Summary
from memory.selectors import facts_active
from memory.services.backup import database_path
from memory.services.backup_forgets import forgets_read, forgets_replay
from memory.services.dedup import fact_remember
from memory.services.erased_marks import fact_mark
from memory.services.facts import fact_forget, fact_store, fact_update
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.services.messages import message_save
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


OLD = "Le code du portail est 7719"
NEW = "Le code du portail est 7719, à taper deux fois"


def test_a_fact_edited_then_forgotten_alone_comes_back_with_its_older_text(
    vector_store, local_embedder
):
    """Backup holds (code_portail, OLD). Since: the owner edits it to NEW, then forgets it
    alone. The restored copy (OLD) is recognised by its id and one of its texts, and
    forgotten again."""
    fact, _ = fact_store(key="code_portail", value=OLD)
    fact_update(fact=fact, actor="user", value=NEW)
    fact_forget(fact=fact, actor="user")
    carried = forgets_read(database_path())
    # The row as the backup holds it (before the edit and the forget).
    Fact.all_objects.filter(pk=fact.pk).update(value=OLD, forgotten=False, forgotten_at=None)
    assert facts_active().filter(key="code_portail").exists()

    forgets_replay(carried)

    assert not facts_active().filter(key="code_portail").exists()


def test_a_fact_restated_by_the_agent_after_a_forget_alone_is_left_active_by_the_restore(
    vector_store, local_embedder
):
    """The owner forgets a fact alone; later the room says it again (a message newer than
    the forget): the agent's statement sets the forgotten one aside and adds a new, active
    fact with the same key and text. A backup taken then, restored with --force over the
    same memory: the carried forget is the forgotten row's (its id), not the new fact's,
    which stays active."""
    fact, _ = fact_store(key="code_portail", value=OLD)
    fact_forget(fact=fact, actor="user")
    said = message_save(channel="whatsapp", role="user", content="Le code du portail est 7719")
    result = fact_remember(key="code_portail", value=OLD, source_message_id=said.id, actor="agent")
    assert result.action == "added" and result.fact.pk != fact.pk
    assert facts_active().filter(key="code_portail").count() == 1
    carried = forgets_read(database_path())  # the replaced memory == the backup here

    forgets_replay(carried)

    assert facts_active().filter(key="code_portail").count() == 1
