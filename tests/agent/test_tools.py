"""The memory__* tools: schemas, input validation, and each tool on a real store."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from agent.tools import TOOLS, ToolContext, tool_definitions, tool_run
from agent.tools_memory import index_key
from memory.models import Fact, FactSource, Message
from memory.services.facts import fact_forget, fact_store
from memory.services.indexing import KIND_FACT, KIND_MESSAGE, index_rows
from memory.services.messages import message_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder):
    question = message_save(
        channel="whatsapp", role="user", content="Le plombier passe mardi à 14h pour la fuite"
    )
    message_save(channel="whatsapp", role="assistant", content="Noté.", reply_to_id=question.id)
    index_rows(KIND_MESSAGE, [question.id])
    return vector_store


@pytest.fixture
def context():
    request = message_save(channel="mission_control", role="user", content="(la demande)")
    return ToolContext(channel="mission_control", message_ids=(request.id,))


def _run(name, tool_input, context):
    outcome = tool_run(name=name, tool_input=tool_input, context=context)
    return outcome, json.loads(outcome.content)


def test_every_tool_has_a_valid_json_schema_and_a_french_description():
    definitions = tool_definitions()
    assert {d["name"] for d in definitions} == set(TOOLS)
    for definition in definitions:
        Draft202012Validator.check_schema(definition["input_schema"])
        assert definition["input_schema"]["type"] == "object"
        assert definition["input_schema"]["additionalProperties"] is False
        assert definition["description"]


@pytest.mark.parametrize(
    ("name", "tool_input", "fragment"),
    [
        ("memory__search", {}, "query : champ obligatoire."),
        ("memory__search", {"query": "x", "limit": 500}, "limit"),
        ("memory__search", {"query": "x", "rm": "-rf"}, "rm : Champ inconnu."),
        ("memory__store_fact", {"key": "Ma Clé", "value": "v"}, "key"),
        ("memory__store_fact", {"key": "k", "value": "v", "type": "secret"}, "type"),
        ("memory__store_fact", {"key": "k", "value": "v", "importance": 3}, "importance"),
        ("memory__recent", {"limit": "beaucoup"}, "limit"),
        ("memory__forget", "Marie", ""),
    ],
)
def test_invalid_inputs_come_back_as_tool_errors(name, tool_input, fragment, context):
    outcome, body = _run(name, tool_input, context)
    assert outcome.is_error
    assert body["error"].startswith(f"Entrée invalide pour {name}")
    assert fragment in body["error"]
    assert Fact.objects.count() == 0


def test_an_unknown_tool_is_an_error(context):
    outcome, body = _run("shell__exec", {"cmd": "ls"}, context)
    assert outcome.is_error
    assert body["error"] == "Outil inconnu : shell__exec."


def test_memory_search_finds_by_meaning_with_id_score_type_channel_and_time(world, context):
    outcome, body = _run("memory__search", {"query": "rendez-vous du plombier"}, context)
    assert not outcome.is_error
    first = body["results"][0]
    assert first["text"].startswith("Le plombier passe mardi")
    assert first["kind"] == "exchange"
    assert first["channel"] == "whatsapp"
    assert first["when"] == "à l'instant"
    assert 0.3 < first["score"] <= 1
    assert first["id"]
    assert len(body["results"]) <= 5


def test_memory_search_text_finds_by_keywords(world, context):
    outcome, body = _run("memory__search_text", {"query": "plombier fuite"}, context)
    assert not outcome.is_error
    assert [r["text"] for r in body["results"]] == ["Le plombier passe mardi à 14h pour la fuite"]
    assert body["results"][0]["kind"] == "message"


def test_memory_index_adds_knowledge_that_search_then_finds(world, context):
    text = "Le digicode de l'immeuble de Paul est B1234"
    outcome, body = _run("memory__index", {"text": text}, context)

    assert not outcome.is_error, body
    fact = Fact.objects.get(key=index_key(text))
    assert fact.value == text
    assert fact.source == FactSource.TOOL
    assert fact.channel == "mission_control"
    assert fact.source_message_id == context.message_ids[0]
    index_rows(KIND_FACT, [fact.id])
    _, found = _run("memory__search", {"query": "digicode chez Paul"}, context)
    assert found["results"][0]["key"] == fact.key


def test_memory_store_fact_stores_through_dedup_with_its_ttl(world, context):
    outcome, body = _run(
        "memory__store_fact",
        {
            "key": "user_injury",
            "value": "Il s'est blessé à l'épaule",
            "type": "event",
            "subjects": ["Épaule", "sport"],
            "ttl": "30d",
        },
        context,
    )

    assert not outcome.is_error, body
    assert body["action"] == "added"
    fact = Fact.objects.get(key="user_injury")
    assert fact.memory_type == "event"
    assert fact.subjects == ["épaule", "sport"]
    assert fact.expires_at is not None
    assert fact.source == FactSource.CONVERSATION
    assert fact.source_message_id == context.message_ids[0]
    assert fact.revisions.get().actor == "agent"


def test_memory_store_fact_refuses_a_bad_ttl(world, context):
    outcome, body = _run(
        "memory__store_fact", {"key": "trip", "value": "En voyage", "ttl": "bientôt"}, context
    )
    assert outcome.is_error
    assert "bientôt" in body["error"]
    assert not Fact.objects.filter(key="trip").exists()


def test_memory_delete_fact_forgets_it_with_the_reason(world, context):
    fact_store(key="user_city", value="Il habite à Pau")
    outcome, body = _run(
        "memory__delete_fact", {"key": "user_city", "reason": "il a déménagé"}, context
    )
    assert not outcome.is_error
    assert body == {"deleted": True, "key": "user_city"}  # the forgotten words are not echoed
    fact = Fact.objects.get(key="user_city")
    assert fact.forgotten
    assert fact.revisions.first().note == "il a déménagé"

    outcome, body = _run("memory__delete_fact", {"key": "inconnue"}, context)
    assert outcome.is_error
    assert body["error"] == "Aucun fait avec la clé « inconnue »."


def test_memory_delete_fact_of_a_forgotten_key_answers_as_for_a_key_never_stored(world, context):
    fact, _ = fact_store(key="ex_adresse", value="12 rue des Lilas")
    fact_forget(fact=fact, actor="user")

    outcome, body = _run("memory__delete_fact", {"key": "ex_adresse"}, context)

    assert outcome.is_error
    assert body == {"error": "Aucun fait avec la clé « ex_adresse »."}


def test_memory_recent_lists_the_latest_active_facts_first(world, context):
    fact_store(key="a_first", value="premier")
    fact_store(key="b_second", value="deuxième")
    forgotten, _ = fact_store(key="c_gone", value="oublié")
    forgotten.forgotten = True
    forgotten.save()

    outcome, body = _run("memory__recent", {"limit": 5}, context)

    assert not outcome.is_error
    assert [f["key"] for f in body["facts"]] == ["b_second", "a_first"]


def test_memory_forget_forgets_the_topic_but_not_the_request(world, context):
    outcome, body = _run("memory__forget", {"topic": "le plombier"}, context)

    assert not outcome.is_error, body
    assert body["counts"]["exchanges"] == 1 and body["forgetting_id"]
    assert "plombier" not in body["summary"]  # the answer names nothing forgotten
    assert not Message.objects.filter(content__contains="plombier").exists()
    assert Message.all_objects.filter(pk=context.message_ids[0], forgetting=None).exists()


def test_memory_forget_dry_run_shows_what_it_would_take_and_changes_nothing(world, context):
    outcome, body = _run("memory__forget", {"topic": "le plombier", "dry_run": True}, context)
    assert not outcome.is_error and body["dry_run"] is True
    assert body["counts"]["exchanges"] == 1 and "plombier" in body["summary"]
    assert Message.objects.filter(content__contains="plombier").exists()


def test_memory_forget_dry_run_shows_nothing_of_a_fact_the_owner_forgot(world, context):
    """The LLM reads the preview: a fact forgotten one by one (its key, its old values)
    is not in it, as if it had never been stored (README)."""
    fact, _ = fact_store(key="plombier_dette", value="Je dois 300 euros au plombier Pereira")
    fact_store(key="plombier_dette", value="Dette réglée", actor="user")
    fact_forget(fact=fact, actor="user")

    outcome, body = _run("memory__forget", {"topic": "le plombier", "dry_run": True}, context)

    assert not outcome.is_error, body
    assert "plombier_dette" not in outcome.content and "Pereira" not in outcome.content
    assert body["counts"]["facts"] == body["counts"]["history"] == 0
    assert body["counts"]["exchanges"] == 1  # what the agent may see is still shown


def test_memory_forget_refuses_a_vague_topic_as_a_tool_error(world, context):
    outcome, body = _run("memory__forget", {"topic": "tout ça"}, context)
    assert outcome.is_error
    assert "trop vague" in body["error"]
    assert Message.objects.filter(content__contains="plombier").exists()


def test_the_forget_tool_and_the_prompt_ask_to_name_nothing_that_was_forgotten():
    """The defect: the prompt asked the LLM to say what was forgotten, so the reply repeated it."""
    from agent.prompts import TOOL_GUIDANCE

    forget = TOOLS["memory__forget"]
    assert forget.input_schema["properties"]["dry_run"]["type"] == "boolean"
    assert "directement" in forget.description and "dry_run=true" in forget.description
    assert "ne répète" in forget.description
    [guidance] = [line for line in TOOL_GUIDANCE.split("\n- ") if "memory__forget" in line]
    assert "dis-lui ce qui a été oublié" not in guidance
    assert "directement" in guidance and "dry_run=true" in guidance
    assert "ne nomme, ne répète et ne résume jamais ce qui a été oublié" in guidance
