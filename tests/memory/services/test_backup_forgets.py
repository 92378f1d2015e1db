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
from memory.services.forgetting import PURGED_TOPIC, forgetting_restore, topic_forget
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


def test_a_fact_forgotten_alone_is_carried_with_who_forgot_it_and_an_expired_one_with_its_expiry():
    """The TTL's purge marks a fact forgotten too (its line EXPIRED, by the system): it is
    carried with the expiry it had (the backup's copy may have none), the owner's (or the
    agent's) forget of one fact with its actor and date."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.expiry import expired_purge

    secret = fact_store(key="code_portail", value="Le code du portail est 7719")[0]
    fact_forget(fact=secret, actor="agent")
    voyage = fact_store(key="voyage", value="En voyage à Rome", ttl="1d")[0]
    expired_purge(now=timezone.now() + timedelta(days=2))
    voyage.refresh_from_db()
    assert voyage.forgotten

    carried = forgets_read(database_path())

    assert sorted((c.alone, c.actor, c.facts, c.expires_at) for c in carried) == [
        (True, "agent", {fact_mark("code_portail", "Le code du portail est 7719")}, None),
        (True, "system", {fact_mark("voyage", "En voyage à Rome")}, voyage.expires_at),
    ]
    secret.refresh_from_db()
    assert {c.created_at for c in carried} == {secret.forgotten_at, voyage.forgotten_at}


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


def test_a_fact_edited_then_taken_by_a_topic_forget_is_taken_again_with_its_older_text(
    vector_store, local_embedder
):
    """QA 7a. Backup holds « voyage_ete » saying « juillet »; since, the owner edited it to
    « août », then forgot « voyage à Zanzibar », which took it. The carried forget knows
    the fact by every text it had (as a fact forgotten alone): the backup's copy is taken."""
    said = "Voyage à Zanzibar en juillet avec Sophie"
    voyage = fact_store(key="voyage_ete", value=said)[0]
    fact_store(key="velo", value="Le vélo est gris")
    fact_update(fact=voyage, actor="user", value="Voyage à Zanzibar en août avec Sophie")
    forgot = topic_forget(topic="voyage à Zanzibar", actor="user")
    assert forgot.counts["facts"] == 1
    carried = forgets_read(database_path())
    # The row as the backup holds it: the forget not made, the edit not made.
    forgetting_restore(forgetting_id=forgot.forgetting_id, actor="user")
    Fact.all_objects.filter(pk=voyage.pk).update(value=said)
    assert facts_active().filter(key="voyage_ete").exists()

    done = forgets_replay(carried)

    assert (done["forgets"], done["facts"]) == (1, 1)
    assert not facts_active().filter(key="voyage_ete").exists()
    assert facts_active().filter(key="velo").exists()


def test_a_history_line_taken_after_a_rename_is_taken_again_under_the_key_it_had(
    vector_store, local_embedder
):
    """QA 7a. Backup holds « ville » with a history line « Je vis à Zanzibar »; since, the
    owner renamed it « ville_natale », then forgot « Zanzibar », which took that line. The
    backup's line sits under « ville »: the carried forget knows it by each key the fact had."""
    fact_store(key="ville", value="Je vis à Zanzibar")
    ville = fact_store(key="ville", value="Je vis à Paris")[0]
    fact_store(key="velo", value="Le vélo est gris")
    fact_update(fact=Fact.objects.get(pk=ville.pk), actor="user", key="ville_natale")
    forgot = topic_forget(topic="Zanzibar", actor="user")
    assert forgot.counts["history"] >= 1
    carried = forgets_read(database_path())
    # The rows as the backup holds them: the forget not made, the rename not made.
    forgetting_restore(forgetting_id=forgot.forgetting_id, actor="user")
    Fact.all_objects.filter(pk=ville.pk).update(key="ville")
    about = FactRevision.objects.filter(fact_id=ville.pk, old_value__contains="Zanzibar")
    assert about.exists()

    forgets_replay(carried)

    assert not about.exists()
    assert not FactRevision.objects.filter(new_value__contains="Zanzibar").exists()
    assert facts_active().filter(key="ville", value="Je vis à Paris").exists()


def test_a_fact_expired_since_the_backup_is_given_its_expiry_and_forgotten_as_expired():
    """QA 7a. The owner gave « code_portail » an expiry after the backup; it ran out and the
    purge forgot it. The backup's copy has no expiry: it gets the one it had, and is
    forgotten as the purge forgot it (same date, by the system, « expired »); restored by
    the owner, it comes back without it, as any expired fact does."""
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import RevisionReason
    from memory.services.expiry import expired_purge
    from memory.services.facts import fact_restore

    code = fact_store(key="code_portail", value="Le code du portail est 4812")[0]
    fact_store(key="velo", value="Le vélo est gris")
    fact_update(fact=code, actor="user", expires_at=timezone.now() + timedelta(hours=1))
    Fact.all_objects.filter(pk=code.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert expired_purge() == 1
    code.refresh_from_db()
    expired_at, expiry = code.forgotten_at, code.expires_at
    carried = forgets_read(database_path())
    # The row as the backup holds it: no expiry, not forgotten.
    Fact.all_objects.filter(pk=code.pk).update(expires_at=None, forgotten=False, forgotten_at=None)
    assert facts_active().filter(key="code_portail").exists()

    done = forgets_replay(carried)

    assert (done["forgets"], done["facts"]) == (1, 1)
    code.refresh_from_db()
    assert (code.forgotten, code.forgotten_at, code.expires_at) == (True, expired_at, expiry)
    last = FactRevision.all_objects.filter(fact=code).latest("id")
    assert (last.reason, last.actor) == (RevisionReason.EXPIRED, "system")
    assert not facts_active().filter(key="code_portail").exists()
    assert facts_active().filter(key="velo").exists()
    fact_restore(fact=code, actor="user")
    code.refresh_from_db()
    assert facts_active().filter(key="code_portail").exists() and code.expires_at is None


def test_an_undone_forget_whose_topic_an_erasure_redacted_since_loses_it_again(
    vector_store, local_embedder
):
    """QA 7a. The owner forgot « voyage à Zanzibar », undid it; after the backup, forgot it
    again and erased that forget, whose purge redacted the undone forget's topic
    (forgetting._undone_topics_redact). The backup's copy of the undone forget (its id and
    date) loses its topic again; an undone forget the erasure left alone keeps its own."""
    from memory.services.erasing import forgetting_erase

    exchange_save("whatsapp", "Le voyage à Zanzibar est en août", "Noté.")
    exchange_save("whatsapp", "Le vélo est rangé au garage", "Noté.")
    first = topic_forget(topic="voyage à Zanzibar", actor="user").forgetting_id
    forgetting_restore(forgetting_id=first, actor="user")
    other = topic_forget(topic="vélo garage", actor="user").forgetting_id
    forgetting_restore(forgetting_id=other, actor="user")
    again = topic_forget(topic="voyage à Zanzibar", actor="user").forgetting_id
    forgetting_erase(forgetting_id=again, actor="user")
    assert Forgetting.objects.get(pk=first).topic == PURGED_TOPIC
    carried = forgets_read(database_path())
    # The undone forget as the backup holds it: its topic in clear.
    Forgetting.objects.filter(pk=first).update(topic="voyage à Zanzibar")

    forgets_replay(carried)

    assert not Forgetting.objects.filter(topic__icontains="zanzibar").exists()
    assert Forgetting.objects.get(pk=first).state == ForgettingState.RESTORED
    assert Forgetting.objects.get(pk=other).topic == "vélo garage"
