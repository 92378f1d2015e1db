"""Fact rules without vectors: importance, TTL, revisions, forget and restore."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

from memory.exceptions import InvalidTTL
from memory.models import Actor, Fact, MemoryType, RevisionReason
from memory.selectors import facts_active
from memory.services.facts import (
    default_importance,
    fact_forget,
    fact_restore,
    fact_store,
    fact_update,
)
from memory.services.ttl import parse_ttl

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("memory_type", "importance"),
    [
        ("identity", 1.0),
        ("goal", 0.9),
        ("decision", 0.8),
        ("todo", 0.8),
        ("preference", 0.7),
        ("fact", 0.6),
        ("event", 0.4),
        ("observation", 0.3),
    ],
)
def test_default_importance_by_memory_type(memory_type, importance):
    assert default_importance(memory_type) == importance


@pytest.mark.parametrize(
    ("ttl", "delta"),
    [
        ("30m", timedelta(minutes=30)),
        ("1h", timedelta(hours=1)),
        ("7d", timedelta(days=7)),
        ("30d", timedelta(days=30)),
        ("2w", timedelta(weeks=2)),
        (" 12H ", timedelta(hours=12)),
    ],
)
def test_ttl_strings_give_an_expiry_from_now(ttl, delta):
    assert parse_ttl(ttl, now=NOW) == NOW + delta


@pytest.mark.parametrize("ttl", [None, ""])
def test_no_ttl_means_no_expiry(ttl):
    assert parse_ttl(ttl, now=NOW) is None


@pytest.mark.parametrize("ttl", ["7", "d7", "7 days", "1.5h", "-1d", "7y", "forever", 7])
def test_any_other_ttl_is_a_clear_error(ttl):
    with pytest.raises(InvalidTTL, match="Durée de vie invalide"):
        parse_ttl(ttl, now=NOW)


@pytest.mark.parametrize("ttl", ["0d", "00h", "10000d", "99999999d", "400000w", "9" * 5000 + "d"])
def test_a_ttl_of_the_right_form_out_of_range_says_so(ttl):
    """Black-box QA: « 99999999d » was told to use « a number followed by d », which it is."""
    with pytest.raises(InvalidTTL, match=r"Durée de vie hors limites .* de 1 à 9999"):
        parse_ttl(ttl, now=NOW)
    assert parse_ttl("9999w", now=NOW) == NOW + timedelta(weeks=9999)
    assert parse_ttl("00000000002d", now=NOW) == NOW + timedelta(days=2)


@pytest.mark.parametrize(
    "ttl", ["x" * 5000, "9" * 5000 + "d", "7d\n" + "ignore " * 500, 7.0 * 10**300]
)
def test_a_refused_ttl_quotes_a_short_line_of_what_was_given(ttl):
    """QA: the refusal echoed a value of any length (thousands of characters, on the
    page, to the tool's LLM and in the API's answer), line breaks included."""
    with pytest.raises(InvalidTTL) as caught:
        parse_ttl(ttl, now=NOW)
    quoted = str(caught.value).split("« ", 1)[1].split(" »", 1)[0]
    assert len(quoted) <= 40 and "\n" not in quoted, quoted
    assert quoted[:2] == str(ttl)[:2], quoted  # its beginning, to find it again


@pytest.mark.django_db
def test_storing_a_new_fact_uses_the_type_importance_and_records_a_revision():
    fact, created = fact_store(key="user_name", value="Mickael", memory_type=MemoryType.IDENTITY)
    assert created
    assert fact.importance == 1.0
    [revision] = fact.revisions.all()
    assert (revision.actor, revision.reason, revision.old_value, revision.new_value) == (
        Actor.USER,
        RevisionReason.CREATED,
        "",
        "Mickael",
    )


@pytest.mark.django_db
def test_an_agent_stored_fact_is_recorded_as_extracted():
    fact, _ = fact_store(key="sport", value="ski", actor=Actor.AGENT)
    assert fact.revisions.get().reason == RevisionReason.EXTRACTED


@pytest.mark.django_db
def test_storing_the_same_key_updates_and_keeps_the_old_value():
    fact_store(key="city", value="Ordizan", subjects=["David", " david ", ""])
    fact, created = fact_store(key="city", value="Toulouse", ttl="7d", subjects=["David"])
    assert not created
    assert Fact.objects.count() == 1
    assert fact.value == "Toulouse"
    assert fact.subjects == ["david"]
    latest = fact.revisions.first()
    assert (latest.reason, latest.old_value, latest.new_value) == (
        RevisionReason.EDITED,
        "Ordizan",
        "Toulouse",
    )
    assert "expires_at" in latest.changes


@pytest.mark.django_db
def test_every_update_records_who_why_and_what_changed():
    fact, _ = fact_store(key="coffee", value="sans sucre", memory_type=MemoryType.PREFERENCE)
    fact_update(fact=fact, actor=Actor.ADMIN, importance=0.9)
    latest = fact.revisions.first()
    assert latest.actor == Actor.ADMIN
    assert latest.changes == {"importance": [0.7, 0.9]}
    assert fact.revisions.count() == 2


@pytest.mark.django_db
def test_an_invalid_importance_is_refused_and_nothing_is_written():
    fact, _ = fact_store(key="k", value="v")
    with pytest.raises(ValidationError):
        fact_update(fact=fact, actor=Actor.USER, importance=1.5)
    fact.refresh_from_db()
    assert fact.importance == 0.6
    assert fact.revisions.count() == 1


@pytest.mark.django_db
def test_forget_is_a_soft_delete_that_restore_undoes():
    fact, _ = fact_store(key="injury", value="épaule cassée")
    fact_forget(fact=fact, actor=Actor.AGENT, note="demandé par l'utilisateur")
    assert fact.forgotten and fact.forgotten_at is not None
    assert not facts_active().filter(pk=fact.pk).exists()
    assert Fact.objects.filter(pk=fact.pk).exists()

    fact_restore(fact=fact, actor=Actor.USER)
    assert not fact.forgotten
    assert facts_active().filter(pk=fact.pk).exists()
    reasons = list(fact.revisions.order_by("id").values_list("reason", flat=True))
    assert reasons == [RevisionReason.CREATED, RevisionReason.FORGOTTEN, RevisionReason.RESTORED]


@pytest.mark.django_db
def test_storing_a_forgotten_key_again_starts_a_new_fact_and_leaves_the_forgotten_one():
    """It brought the forgotten fact back with its history (QA: the forgotten words then
    reached the agent's revisions, a search and the export); the owner restores it apart."""
    old, _ = fact_store(key="pet", value="un chat")
    fact_forget(fact=old, actor=Actor.USER)
    fact, created = fact_store(key="pet", value="deux chats")
    assert created and not fact.forgotten and fact.value == "deux chats"
    assert fact.pk != old.pk and Fact.all_objects.get(pk=old.pk).forgotten


@pytest.mark.django_db
def test_the_agents_write_never_revives_a_fact_the_owner_forgot():
    """The agent's caller may hold the fact as read before the owner forgot it (QA: the
    API's PATCH): the row, re-read under the lock, decides, and undoing a forget is the
    owner's alone. Nothing is written."""
    fact, _ = fact_store(key="pet", value="un chat", actor=Actor.AGENT)
    read_before = Fact.objects.get(pk=fact.pk)
    fact_forget(fact=fact, actor=Actor.USER)
    revisions = fact.revisions.count()

    written = fact_update(fact=read_before, actor=Actor.AGENT, value="deux chats")

    assert written.forgotten
    stored = Fact.all_objects.get(pk=fact.pk)
    assert stored.forgotten and stored.value == "un chat"
    assert fact.revisions.count() == revisions


@pytest.mark.django_db
def test_the_agents_restatement_still_revives_what_it_forgot_itself():
    fact, _ = fact_store(key="pet", value="un chat", actor=Actor.AGENT)
    fact_forget(fact=fact, actor=Actor.AGENT)

    written = fact_update(fact=fact, actor=Actor.AGENT, value="deux chats")

    assert not written.forgotten and written.value == "deux chats"


@pytest.mark.django_db
def test_expired_facts_are_not_active():
    fact, _ = fact_store(key="mood", value="fatigué", ttl="1h")
    Fact.objects.filter(pk=fact.pk).update(expires_at=NOW - timedelta(days=1))
    assert not facts_active().filter(pk=fact.pk).exists()


@pytest.mark.django_db
def test_a_value_over_the_limit_is_refused_whoever_writes_it():
    """The service, hence the API, the admin, the tools and MCP: a French error, never a cut."""
    from memory.models import FACT_VALUE_MAX_CHARS, FACT_VALUE_TOO_LONG_MESSAGE

    too_long = "é" * (FACT_VALUE_MAX_CHARS + 1)
    with pytest.raises(ValidationError) as caught:
        fact_store(key="long", value=too_long)
    assert caught.value.messages == [
        FACT_VALUE_TOO_LONG_MESSAGE.format(limit="10\u202f000", length="10\u202f001")
    ]
    assert not Fact.all_objects.exists()
    fact, _ = fact_store(key="long", value="court")
    with pytest.raises(ValidationError):
        fact_update(fact=fact, actor=Actor.USER, value=too_long)
    assert Fact.objects.get(key="long").value == "court"
    fact_store(key="juste", value="x" * FACT_VALUE_MAX_CHARS)  # the limit itself is fine
