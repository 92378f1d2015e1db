"""The agent states a key whose fact was forgotten: the forgotten fact stays forgotten and
out of the agent's reach, and the agent's words start a new fact.

Audit 9: the agent's token (API or MCP) stating a key the owner forgot brought the owner's
row back, with its subjects and its history (the forgotten words readable through the
revisions); forgetting the owner's fact and stating it again replaced the owner's value;
MCP's answer told a key a forget took from one never stored; an item of the agent's own
that the owner deleted was "already deleted" to the agent, and learnt again on its row.
"""

from __future__ import annotations

import asyncio

import pytest

from memory.models import Fact, FactRevision
from memory.services.facts import fact_forget, fact_restore, fact_store
from memory.services.forgetting import topic_forget
from memory.services.self_memory import agent_item_store

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "12 rue des Lilas"
FACTS = "/api/v1/memory/facts"


def _mcp(name: str, arguments: dict):
    from memory.mcp.server import build_server

    return asyncio.run(build_server().call_tool(name, arguments))


@pytest.fixture
def forgotten():
    """A fact the owner wrote, then forgot one by one."""
    fact, _ = fact_store(key="ex_adresse", value=SECRET, subjects=["lilas"], actor="user")
    return fact_forget(fact=fact, actor="user")


def test_the_agents_token_stating_a_forgotten_key_sees_nothing_of_it(agent_api, forgotten):
    never = agent_api.post(FACTS, {"key": "jamais_vu", "value": "Habite à Nantes"}, format="json")
    gone = agent_api.post(FACTS, {"key": "ex_adresse", "value": "Habite à Nantes"}, format="json")

    assert never.status_code == gone.status_code == 201, gone.content
    assert "lilas" not in gone.content.decode().lower()
    history = agent_api.get(f"{FACTS}/ex_adresse/revisions")
    assert history.status_code == 200
    assert "Lilas" not in history.content.decode()
    # The owner's fact is still forgotten, untouched, and the owner can restore it.
    owner_fact = Fact.all_objects.get(pk=forgotten.pk)
    assert owner_fact.forgotten and owner_fact.value == SECRET


def test_the_same_words_from_the_agent_do_not_undo_the_owners_forget(agent_api, forgotten):
    assert agent_api.post(f"{FACTS}/ex_adresse/restore").status_code == 403
    agent_api.post(FACTS, {"key": "ex_adresse", "value": SECRET}, format="json")

    owner_fact = Fact.all_objects.get(pk=forgotten.pk)
    assert owner_fact.forgotten
    assert owner_fact.subjects == ["lilas"]  # nothing of it moved to the agent's fact
    assert Fact.objects.get(key="ex_adresse").subjects == []


def test_restored_by_the_owner_it_takes_its_key_back_when_free(agent_api, forgotten):
    agent_api.post(FACTS, {"key": "ex_adresse", "value": "Habite à Nantes"}, format="json")
    agent_api.delete(f"{FACTS}/ex_adresse")  # the agent's own fact, forgotten in its turn
    Fact.all_objects.filter(key="ex_adresse").delete()  # its key free again

    restored = fact_restore(fact=forgotten, actor="user")

    assert (restored.key, restored.value, restored.forgotten) == ("ex_adresse", SECRET, False)


def test_restored_while_the_agent_holds_its_key_both_stay_visible(agent_api, forgotten):
    agent_api.post(FACTS, {"key": "ex_adresse", "value": "Habite à Nantes"}, format="json")

    restored = fact_restore(fact=forgotten, actor="user")

    assert restored.key == f"ex_adresse (fait oublié n° {forgotten.pk})"
    assert Fact.objects.get(key="ex_adresse").value == "Habite à Nantes"


def test_the_agent_cannot_replace_the_owners_value_by_forgetting_then_stating_it(agent_api):
    fact, _ = fact_store(key="ville", value="Mickael habite à Nantes", actor="user")

    assert agent_api.delete(f"{FACTS}/ville").status_code == 204
    agent_api.post(FACTS, {"key": "ville", "value": "Mickael habite à Paris"}, format="json")

    # The owner's row keeps the owner's words (brought back, still under the owner's lock).
    fact.refresh_from_db()
    assert fact.value == "Mickael habite à Nantes"
    assert not FactRevision.all_objects.filter(fact=fact, new_value__contains="Paris").exists()


def test_mcp_remember_on_a_forgotten_key_answers_as_for_a_key_never_stored(
    forgotten, vector_store, local_embedder
):
    never = _mcp("remember", {"key": "jamais_vu", "value": "Habite à Nantes"})
    gone = _mcp("remember", {"key": "ex_adresse", "value": "Habite à Nantes"})

    assert not gone.is_error, gone.content[0].text
    assert gone.structured_content["action"] == never.structured_content["action"] == "added"
    assert "lilas" not in str(gone.structured_content).lower()


def test_mcp_remember_on_a_key_a_topic_forget_took_answers_added(vector_store, local_embedder):
    fact_store(key="voyage_ete", value="Voyage à Zanzibar en août", actor="user")
    topic_forget(topic="Zanzibar", actor="user")

    gone = _mcp("remember", {"key": "voyage_ete", "value": "Pas de grand voyage cet été"})

    assert not gone.is_error, gone.content[0].text
    assert gone.structured_content["action"] == "added", gone.structured_content


@pytest.fixture
def owner_deleted_item():
    content = "Je peux lire les mails de Mickael"
    item = agent_item_store(kind="self", category="capability", content=content, actor="agent")
    return fact_forget(fact=item.item, actor="user", note="je ne veux pas")


def test_self_forget_of_an_item_the_owner_deleted_answers_as_for_an_unknown_id(
    owner_deleted_item, vector_store, local_embedder
):
    never = _mcp("self_forget", {"id": 999_999, "reason": "fini"})
    gone = _mcp("self_forget", {"id": owner_deleted_item.pk, "reason": "fini"})

    assert never.is_error and gone.is_error
    assert gone.content[0].text == never.content[0].text.replace(
        "999999", str(owner_deleted_item.pk)
    )


def test_self_remember_does_not_bring_back_an_item_the_owner_deleted(
    owner_deleted_item, vector_store, local_embedder
):
    result = _mcp("self_remember", {"content": owner_deleted_item.value, "category": "capability"})

    assert not result.is_error, result.content[0].text
    assert Fact.all_objects.get(pk=owner_deleted_item.pk).forgotten


def test_self_forget_refuses_a_nul_character_in_its_reason(vector_store, local_embedder):
    added = _mcp("self_remember", {"content": "Je peux lire le Lobby", "category": "capability"})
    item_id = added.structured_content["item"]["id"]

    result = _mcp("self_forget", {"id": item_id, "reason": "fini\x00"})

    assert result.is_error and "nul" in result.content[0].text
    assert not Fact.all_objects.get(pk=item_id).forgotten
    notes = FactRevision.all_objects.values_list("note", flat=True)
    assert not any("\x00" in note for note in notes)  # (SQLite's LIKE stops at a NUL)


def test_restored_a_fact_whose_key_the_suffix_cut_never_takes_a_key_it_never_had():
    key = "k" * 195  # the key column holds 200: set aside, its key is cut short
    owner, _ = fact_store(key=key, value=SECRET, actor="user")
    fact_forget(fact=owner, actor="user")
    agents, _ = fact_store(key=key, value="Habite à Nantes", actor="agent")
    aside = Fact.all_objects.get(pk=owner.pk).key
    Fact.all_objects.filter(pk=agents.pk).delete()  # the key free again

    restored = fact_restore(fact=Fact.all_objects.get(pk=owner.pk), actor="user")

    assert restored.key in (key, aside)  # its own, or the one it waited under


def test_an_owner_edit_that_brings_a_fact_set_aside_back_gives_its_key_back_when_free():
    from memory.services.erasing import fact_erase
    from memory.services.facts import fact_update

    owner, _ = fact_store(key="adresse", value=SECRET, actor="user")
    fact_forget(fact=owner, actor="user")
    agents, _ = fact_store(key="adresse", value="Habite à Nantes", actor="agent")
    fact_erase(fact=agents, actor="user")  # the key is free again

    edited = fact_update(fact=Fact.all_objects.get(pk=owner.pk), actor="user", value="Lyon")

    assert not edited.forgotten
    assert edited.key == "adresse"  # as fact_restore gives it


def test_an_older_export_does_not_bring_back_a_fact_forgotten_then_set_aside():
    """Set aside, the owner's forgotten fact no longer holds its key; the agent's newer
    fact under it is erased: an export taken before the forget still finds it forgotten."""
    from memory.services.erasing import fact_erase
    from memory.services.portability import export_lines
    from memory.services.portability_import import memory_import_lines

    owner, _ = fact_store(key="adresse", value=SECRET, actor="user")
    lines = list(export_lines())
    fact_forget(fact=owner, actor="user")
    agents, _ = fact_store(key="adresse", value="Habite à Nantes", actor="agent")
    fact_erase(fact=agents, actor="user")

    report = memory_import_lines(lines)

    assert not Fact.objects.filter(value=SECRET, forgotten=False).exists()
    assert any("adresse" in conflict for conflict in report.conflicts)


def test_an_aside_key_taken_by_an_imported_fact_sets_the_forgotten_one_aside_under_another(
    agent_api, forgotten
):
    """An export of another memory may hold a fact under any aside key (the import keeps
    it): setting a fact aside never collides with it (a 500 before)."""
    taken = f"ex_adresse (fait oublié n° {forgotten.pk})"
    Fact.all_objects.create(key=taken, value="Importé d'une autre mémoire")

    response = agent_api.post(FACTS, {"key": "ex_adresse", "value": "Nantes"}, format="json")

    assert response.status_code == 201, response.content
    aside = Fact.all_objects.get(pk=forgotten.pk)
    assert aside.forgotten and aside.key not in ("ex_adresse", taken)
    assert aside.key.startswith("ex_adresse (fait oublié n° ")


@pytest.mark.parametrize("spelled", ["ex_adresse", "EX_Adresse"])
def test_the_agents_key_in_other_letters_is_the_owners_through_a_forget_and_its_undo(
    agent_api, forgotten, spelled
):
    """The agent's key in other letters started its fact under its own spelling, and the
    undo, which looks for the owner's key, left both facts visible apart from the rule of
    the exact key (review). It now goes exactly as the owner's own spelling does."""
    agent_api.post(FACTS, {"key": spelled, "value": "Habite à Nantes"}, format="json")

    restored = fact_restore(fact=forgotten, actor="user")

    assert restored.key == f"ex_adresse (fait oublié n° {forgotten.pk})"
    assert list(Fact.objects.filter(key__iexact="ex_adresse").values_list("key", "value")) == [
        ("ex_adresse", "Habite à Nantes")
    ]


def test_a_key_ending_like_a_set_aside_one_is_refused_in_any_letters(agent_api):
    response = agent_api.post(
        FACTS, {"key": "ex_adresse (OUBLI N° 1)", "value": "Habite à Nantes"}, format="json"
    )

    assert response.status_code == 400, response.content


def test_mcp_remember_in_other_letters_answers_updated_not_added(vector_store, local_embedder):
    fact_store(key="user_city", value="Mickael habite à Lyon", actor="agent")

    answer = _mcp("remember", {"key": "User_City", "value": "Mickael habite à Bordeaux"})

    assert not answer.is_error, answer.content[0].text
    assert answer.structured_content["action"] == "updated"
    assert list(Fact.objects.values_list("key", "value")) == [
        ("user_city", "Mickael habite à Bordeaux")
    ]


@pytest.mark.parametrize(
    "key", ["Ville_Préférée", "ville_pre\u0301fe\u0301re\u0301e", "VILLE_PRÉFÉRÉE"]
)
def test_mcp_remember_in_other_accented_letters_updates_the_stored_key(
    vector_store, local_embedder, key
):
    """Only ASCII letters were folded: « VILLE_PRÉFÉRÉE », or the key with its accents
    typed apart (which looks exactly alike), started a second fact, both in the prompt."""
    fact_store(key="ville_préférée", value="Mickael préfère Lyon", actor="agent")

    answer = _mcp("remember", {"key": key, "value": "Mickael préfère Bordeaux"})

    assert not answer.is_error, answer.content[0].text
    assert answer.structured_content["action"] == "updated"
    assert list(Fact.objects.values_list("key", "value")) == [
        ("ville_préférée", "Mickael préfère Bordeaux")
    ]


def test_the_undo_of_a_topic_forget_keeps_the_agents_statement_of_a_key_the_owner_forgot(
    agent_api, forgotten, vector_store, local_embedder
):
    """The owner forgot the fact, a topic forget took it too, the agent stated its key
    meanwhile; the undo of the topic forget gives the fact back to the owner's forget.
    The undo moved the agent's words onto it: that revived the owner's forget, then (once
    the agent's write could no longer revive it) dropped the statement. The statement is
    news the owner's forget does not concern: it keeps the key, the forgotten fact waits
    aside under its own id, as when the agent states a key the owner forgot."""
    from memory.models import Forgetting
    from memory.services.forgetting import forgetting_restore

    topic_forget(topic="Lilas", actor="user", only=[f"fact:{forgotten.pk}"])
    forgetting = Forgetting.objects.latest("id")
    assert Fact.all_objects.get(pk=forgotten.pk).forgetting_id == forgetting.id
    stated = agent_api.post(FACTS, {"key": "ex_adresse", "value": "Habite à Nantes"}, format="json")
    assert stated.status_code == 201, stated.content

    forgetting_restore(forgetting_id=forgetting.id, actor="user")

    owner_fact = Fact.all_objects.get(pk=forgotten.pk)
    assert (owner_fact.forgotten, owner_fact.value) == (True, SECRET)
    assert owner_fact.key == f"ex_adresse (fait oublié n° {forgotten.pk})"
    assert list(Fact.objects.filter(key="ex_adresse").values_list("value", flat=True)) == [
        "Habite à Nantes"
    ]
