"""The owner's edits stick: a restatement changes only what it states, races never undo an edit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Actor, Fact, FactRevision, IndexState
from memory.services.dedup import fact_remember
from memory.services.expiry import expired_purge
from memory.services.facts import fact_forget, fact_restore, fact_store, fact_update
from memory.services.indexing import KIND_FACT, index_row
from tests.fakes.anthropic import text_message
from tests.memory.admin_forms import fact_admin_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def owned_fact():
    """A fact the owner tuned by hand: importance, subjects, expiry, channel."""
    fact, _ = fact_store(key="coffee", value="Café serré sans sucre", memory_type="preference")
    return fact_update(
        fact=fact,
        actor=Actor.USER,
        importance=0.95,
        subjects=["cafe", "matin"],
        ttl="30d",
        channel="whatsapp",
    )


@pytest.fixture
def learnt_fact():
    """A fact the agent learnt from a conversation: nothing in it is the owner's."""
    fact, _ = fact_store(
        key="bike", value="Le vélo est au garage", importance=0.6, actor=Actor.AGENT
    )
    return fact


def test_extraction_restating_a_fact_changes_only_what_it_states(owned_fact):
    before = Fact.objects.get(pk=owned_fact.pk)
    fact_store(
        key="coffee",
        value="Café serré sans sucre",
        memory_type="preference",
        importance=0.7,  # the extractor's default guess
        subjects=["boisson"],
        source="conversation",
        channel="mission_control",
        actor=Actor.AGENT,
    )
    after = Fact.objects.get(pk=owned_fact.pk)
    assert after.importance == 0.95 and after.expires_at == before.expires_at
    assert after.channel == "whatsapp" and after.source == before.source
    assert after.subjects == ["cafe", "matin", "boisson"]  # the agent's subjects are added


def test_an_unchanged_restatement_writes_no_revision_and_no_reembedding(owned_fact):
    revisions = FactRevision.objects.count()
    before = Fact.objects.get(pk=owned_fact.pk)
    for actor in (Actor.AGENT, Actor.USER):
        fact_store(key="coffee", value="Café serré sans sucre", actor=actor)
    fact = Fact.objects.get(pk=owned_fact.pk)
    assert FactRevision.objects.count() == revisions
    assert fact.updated_at == before.updated_at
    assert fact.version == before.version  # nothing for the indexing machine: no re-embedding


def test_a_restatement_with_a_new_value_keeps_the_old_one_in_the_history(learnt_fact):
    fact_store(key="bike", value="Le vélo est chez Paul", importance=0.4, actor=Actor.AGENT)
    fact = Fact.objects.get(pk=learnt_fact.pk)
    assert (fact.value, fact.importance) == ("Le vélo est chez Paul", 0.4)
    latest = fact.revisions.first()
    assert (latest.actor, latest.old_value, latest.new_value) == (
        "agent",
        "Le vélo est au garage",
        "Le vélo est chez Paul",
    )
    assert latest.changes == {
        "value": ["Le vélo est au garage", "Le vélo est chez Paul"],
        "importance": [0.6, 0.4],
    }


def test_the_agent_never_overwrites_what_the_owner_set_the_value_included(owned_fact, caplog):
    """Extraction, the agent's tools and its API token: no agent write undoes the owner's."""
    before = Fact.objects.get(pk=owned_fact.pk)
    revisions = FactRevision.objects.count()
    fact_store(
        key="coffee",
        value="Café allongé",
        memory_type="fact",
        importance=0.3,
        ttl="",
        actor=Actor.AGENT,
    )
    fact_update(fact=before, actor=Actor.AGENT, value="Thé vert", importance=0.1)
    after = Fact.objects.get(pk=owned_fact.pk)
    assert (after.value, after.memory_type, after.importance, after.expires_at) == (
        "Café serré sans sucre",
        "preference",
        0.95,
        before.expires_at,
    )
    assert FactRevision.objects.count() == revisions  # nothing changed, nothing recorded
    assert "left as is: the owner set it" in caplog.text
    assert set(after.owner_fields) >= {"value", "importance", "subjects", "expires_at"}


def test_an_owner_edit_makes_a_learnt_field_the_owners(learnt_fact):
    fact_update(fact=learnt_fact, actor=Actor.USER, value="Le vélo est à la cave")
    fact_store(key="bike", value="Le vélo est au garage", importance=0.2, actor=Actor.AGENT)
    fact = Fact.objects.get(pk=learnt_fact.pk)
    assert (fact.value, fact.importance) == ("Le vélo est à la cave", 0.2)
    assert fact.owner_fields == ["value"]


def test_the_dashboard_add_form_on_a_known_key_keeps_the_owner_settings(owned_fact, staff_client):
    response = staff_client.post(
        "/memory/facts/", {"key": "coffee", "value": "Café serré", "memory_type": "preference"}
    )
    assert response.status_code in (200, 201, 302), response.content.decode()[:500]
    fact = Fact.objects.get(pk=owned_fact.pk)
    assert (fact.value, fact.importance, fact.subjects) == ("Café serré", 0.95, ["cafe", "matin"])


def test_every_revision_says_who_changed_what(owned_fact):
    fact_update(fact=owned_fact, actor=Actor.ADMIN, importance=0.5, value="Café serré")
    fact_forget(fact=owned_fact, actor=Actor.USER)
    forgotten, edited = Fact.all_objects.get(pk=owned_fact.pk).revisions.all()[:2]
    assert edited.actor == "admin" and edited.changes == {
        "value": ["Café serré sans sucre", "Café serré"],
        "importance": [0.95, 0.5],
    }
    assert forgotten.actor == "user" and forgotten.changes == {"forgotten": [False, True]}
    created = Fact.all_objects.get(pk=owned_fact.pk).revisions.last()
    assert created.changes["value"] == [None, "Café serré sans sucre"]
    assert not FactRevision.objects.filter(changes={}).exists()


def test_a_write_with_an_instance_read_before_a_slow_call_undoes_no_edit_or_forget(learnt_fact):
    stale = Fact.objects.get(pk=learnt_fact.pk)  # read before a slow LLM call
    fact_update(fact=Fact.objects.get(pk=learnt_fact.pk), actor=Actor.USER, importance=0.2)
    fact_update(fact=stale, actor=Actor.AGENT, value="Le vélo est chez Paul")
    fact = Fact.objects.get(pk=learnt_fact.pk)
    assert (fact.value, fact.importance) == ("Le vélo est chez Paul", 0.2)

    stale = Fact.objects.get(pk=learnt_fact.pk)
    fact_forget(fact=Fact.objects.get(pk=learnt_fact.pk), actor=Actor.USER)
    fact_update(fact=stale, actor=Actor.AGENT, revive=False, value="autre")
    fact = Fact.all_objects.get(pk=learnt_fact.pk)
    assert fact.forgotten and fact.value == "Le vélo est chez Paul"


def test_a_dedup_merge_decided_while_the_owner_forgot_the_target_does_not_revive_it(
    vector_store, local_embedder, fake_anthropic, monkeypatch, caplog
):
    import agent.client

    target, _ = fact_store(key="shoulder", value="Mickael s'est cassé l'épaule en ski")
    index_row(KIND_FACT, target.pk)
    real = agent.client.llm_json

    def slow_llm_json(**kwargs):
        # While the LLM decides, the owner forgets the target.
        fact_forget(fact=Fact.objects.get(pk=target.pk), actor=Actor.USER)
        return real(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", slow_llm_json)
    fake_anthropic.script(text_message(f'{{"action": "UPDATE", "id": {target.pk}}}'))
    result = fact_remember(
        key="mickael_epaule", value="Mickael s'est cassé l'épaule en ski le 3 mars"
    )
    fact = Fact.objects.get(pk=target.pk)
    assert fact.forgotten and fact.value == "Mickael s'est cassé l'épaule en ski"
    assert result.action == "noop"
    assert "forgotten while deciding" in caplog.text


def _shoulder_edited_while_the_llm_decides(monkeypatch, fake_anthropic, action, **edit):
    """The agent's « shoulder » fact, indexed; the dedup LLM answers ``action`` on it, and
    the owner makes ``edit`` to it while the LLM decides."""
    import agent.client

    target, _ = fact_store(
        key="shoulder", value="Mickael s'est cassé l'épaule en ski", actor=Actor.AGENT
    )
    index_row(KIND_FACT, target.pk)
    real = agent.client.llm_json

    def slow_llm_json(**kwargs):
        fact_update(fact=Fact.objects.get(pk=target.pk), actor=Actor.USER, **edit)
        return real(**kwargs)

    monkeypatch.setattr(agent.client, "llm_json", slow_llm_json)
    fake_anthropic.script(text_message(f'{{"action": "{action}", "id": {target.pk}}}'))
    return target


def test_a_dedup_merge_keeps_an_owner_edit_made_while_the_llm_decided(
    vector_store, local_embedder, fake_anthropic, monkeypatch
):
    # While the LLM decides, the owner raises the importance and adds a subject.
    target = _shoulder_edited_while_the_llm_decides(
        monkeypatch, fake_anthropic, "UPDATE", importance=0.9, subjects=["sante"]
    )
    result = fact_remember(
        key="mickael_epaule",
        value="Mickael s'est cassé l'épaule en ski le 3 mars",
        subjects=["ski"],
    )
    fact = Fact.objects.get(pk=target.pk)
    assert result.action == "updated"
    assert fact.value == "Mickael s'est cassé l'épaule en ski le 3 mars"
    assert (fact.importance, fact.subjects) == (0.9, ["sante", "ski"])


def test_a_noop_decided_while_the_owner_rewrote_the_target_keeps_the_statement(
    vector_store, local_embedder, fake_anthropic, monkeypatch
):
    """QA: « already known » was said of the value the LLM saw; the owner corrected it
    meanwhile (the ankle, not the shoulder), and the statement was known nowhere."""
    _shoulder_edited_while_the_llm_decides(
        monkeypatch, fake_anthropic, "NOOP", value="Mickael s'est foulé la cheville en ski"
    )
    statement = "Mickael s'est cassé l'épaule au ski"
    result = fact_remember(key="mickael_epaule", value=statement)
    values = set(Fact.objects.values_list("value", flat=True))
    assert values == {"Mickael s'est foulé la cheville en ski", statement}, result.action
    assert result.action == "added"


def test_a_statement_with_a_ttl_made_again_renews_its_expiry_from_now():
    """A TTL counts from now: said again, the state still holds, and its expiry moves on
    (review: counted from the statement's message instead, a digest dated by its batch's
    oldest message stored facts already expired, and an older message's late statement
    cut short an expiry a later one had renewed)."""
    from agent.extraction import fact_candidate_store, facts_parse
    from memory.services.messages import message_save

    old = message_save(
        channel="whatsapp",
        role="user",
        content="Dentiste mardi",
        created_at=timezone.now() - timedelta(days=3),
    )
    [candidate], _ = facts_parse(
        {"facts": [{"key": "rdv_dentiste", "value": "Dentiste mardi", "ttl": "2d"}]}
    )
    first = fact_candidate_store(candidate, channel="whatsapp", source_message_id=old.id)
    stored = Fact.objects.get(pk=first.fact.pk)
    assert stored.expires_at > timezone.now() + timedelta(days=1)  # not stored expired
    again = fact_candidate_store(candidate, channel="whatsapp", source_message_id=old.id)
    assert Fact.objects.get(pk=again.fact.pk).expires_at >= stored.expires_at


def test_after_an_embedder_change_extracted_facts_are_kept_in_t1(vector_store, local_embedder):
    from memory.stores.vectors import KNOWLEDGE, VectorPoint

    # The knowledge collection holds vectors of another embedder (before `reindex`).
    vector_store.ensure_collection(KNOWLEDGE, 8)
    vector_store.upsert(
        KNOWLEDGE,
        [
            VectorPoint(
                id="00000000-0000-0000-0000-000000000001", vector=[1.0] + [0.0] * 7, payload={}
            )
        ],
    )
    result = fact_remember(key="bike", value="Le vélo est au garage", actor=Actor.AGENT)
    fact = Fact.objects.get(pk=result.fact.pk)
    index_row(KIND_FACT, fact.pk)
    fact.refresh_from_db()
    assert fact.index_state == IndexState.FAILED and "reindex" in fact.index_error


def test_dedup_sees_facts_not_indexed_yet(vector_store, local_embedder):
    first = fact_remember(key="epaule", value="Mickael s'est cassé l'épaule", actor=Actor.AGENT)
    second = fact_remember(
        key="epaule_mickael", value="Mickael s'est cassé l'épaule", actor=Actor.AGENT
    )
    assert second.fact.pk == first.fact.pk and Fact.objects.count() == 1


def test_restoring_an_expired_fact_brings_it_back_for_good():
    fact, _ = fact_store(key="mood", value="fatigué", ttl="1h", actor=Actor.AGENT)
    Fact.objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired_purge()
    fact_restore(fact=Fact.all_objects.get(pk=fact.pk), actor=Actor.USER)
    expired_purge()
    fact = Fact.objects.get(pk=fact.pk)
    assert not fact.forgotten and fact.expires_at is None
    restored = fact.revisions.first()
    assert restored.reason == "restored" and restored.changes["expires_at"][1] is None
    assert restored.changes["forgotten"] == [True, False]
    # The owner kept it for good: an extraction does not put an expiry back.
    fact_store(key="mood", value="fatigué", ttl="1h", actor=Actor.AGENT)
    assert Fact.objects.get(pk=fact.pk).expires_at is None


def test_restating_an_expired_fact_brings_it_back_without_its_old_expiry():
    fact, _ = fact_store(key="mood", value="fatigué", ttl="1h", actor=Actor.AGENT)
    Fact.objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired_purge()
    fact_store(key="mood", value="fatigué", actor=Actor.AGENT)
    expired_purge()
    fact = Fact.objects.get(pk=fact.pk)
    assert not fact.forgotten and fact.expires_at is None
    fact_store(key="mood", value="épuisé", ttl="1h", actor=Actor.AGENT)
    assert Fact.objects.get(pk=fact.pk).expires_at > timezone.now()


def test_the_agent_does_not_bring_back_a_fact_past_the_expiry_the_owner_set():
    fact, _ = fact_store(key="parking", value="Garé niveau -2", ttl="1h", actor=Actor.USER)
    Fact.objects.filter(pk=fact.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired_purge()
    fact_store(key="parking", value="Garé niveau -2", actor=Actor.AGENT)
    assert Fact.all_objects.get(pk=fact.pk).forgotten
    fact_store(key="parking", value="Garé niveau -3", actor=Actor.USER)
    fact = Fact.objects.get(pk=fact.pk)
    assert not fact.forgotten and fact.expires_at is None


@pytest.mark.parametrize("key", ["a/b", "", " espace", "ligne\nsuivante", "anti\\slash"])
def test_the_key_rule_lives_in_the_model(key):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        Fact(key=key, value="v").full_clean()


def test_the_admin_and_the_api_refuse_a_slash_key_in_french(staff_client, agent_api):
    response = staff_client.post("/admin/memory/fact/add/", fact_admin_form(key="a/b"))
    assert response.status_code == 200 and "ne peut contenir ni" in response.content.decode()
    response = agent_api.post("/api/memory/facts", {"key": "a/b", "value": "v"}, format="json")
    assert response.status_code == 400 and "ne peut contenir ni" in response.content.decode()
    assert not Fact.all_objects.exists()


def test_the_dashboard_add_form_refuses_a_slash_key_in_french(staff_client):
    from memory.models import FACT_KEY_MESSAGE

    response = staff_client.post("/memory/facts/", {"key": "a/b", "value": "v"})
    assert response.status_code in (200, 422)
    assert FACT_KEY_MESSAGE.replace("'", "&#x27;") in response.content.decode()
    assert not Fact.all_objects.exists()


def test_memory_renders_even_with_a_slash_key_in_the_database(staff_client):
    fact, _ = fact_store(key="ok_key", value="v")
    Fact.all_objects.filter(pk=fact.pk).update(key="a/b")
    response = staff_client.get("/memory/")
    assert response.status_code == 200


def test_the_admin_stores_a_key_typed_with_its_accent_apart_composed(staff_client):
    """The admin's key with a combining accent is the key a composed « é » reads: stored
    composed, so the agent's restatement and the pages find it; the decomposed twin of
    another fact's key is that key, taken."""
    fact, _ = fact_store(key="ancienne_clé", value="v", actor=Actor.USER)
    fact_store(key="café_préféré", value="Le Procope", actor=Actor.USER)

    response = staff_client.post(
        f"/admin/memory/fact/{fact.pk}/change/", fact_admin_form(key="e\u0301cole")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Fact.objects.get(pk=fact.pk).key == "école"

    response = staff_client.post(
        f"/admin/memory/fact/{fact.pk}/change/",
        fact_admin_form(key="cafe\u0301_pre\u0301fe\u0301re\u0301"),
    )
    assert response.status_code == 200 and "déjà prise" in response.content.decode()
    assert Fact.objects.get(pk=fact.pk).key == "école"
