"""The agent's self and goals through the real agent loop and the fake Messages API."""

from __future__ import annotations

import json

import pytest

from agent.loop import handle_message
from memory.models import Fact, FactKind, FactRevision, MemorySettings, RevisionReason
from memory.services.indexing import KIND_FACT, index_rows
from memory.services.self_memory import agent_item_store
from tests.fakes.anthropic import text_message, tool_use_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):
    settings.AGENT_COALESCE_SECONDS = 0
    return fake_anthropic


def _index_agent_items():
    index_rows(KIND_FACT, list(Fact.all_objects.values_list("id", flat=True)))


def _tool_result(request) -> dict:
    [result] = request.tool_results()
    assert "is_error" not in result, result
    return json.loads(result["content"])


def test_the_agent_stores_a_self_item_and_a_goal_then_finds_them_later(world):
    world.script(
        tool_use_message(
            ("memory__store_self", {"content": "Je peux lire le Lobby", "category": "capability"}),
            (
                "memory__store_goal",
                {
                    "content": "J'aimerais pouvoir chercher sur le web",
                    "category": "capability_request",
                },
            ),
        ),
        text_message("Oh cool, je ne savais pas !"),
    )
    handle_message(channel="mission_control", text="Tu sais que tu peux lire le Lobby maintenant ?")

    [capability] = Fact.all_objects.filter(kind=FactKind.SELF)
    assert (capability.value, capability.category) == ("Je peux lire le Lobby", "capability")
    [goal] = Fact.all_objects.filter(kind=FactKind.GOAL)
    assert goal.category == "capability_request"
    # Written by its tool call, not extracted from the conversation (tool writes say so).
    assert capability.revisions.get().reason == RevisionReason.CREATED
    _index_agent_items()

    world.script(
        tool_use_message(("memory__search_self", {"query": "ce que je sais lire"})),
        tool_use_message(("memory__search_goals", {"query": "ce que j'aimerais apprendre"})),
        text_message("Je peux lire le Lobby, et j'aimerais chercher sur le web."),
    )
    handle_message(channel="whatsapp", text="Tu sais faire quoi, et tu aimerais apprendre quoi ?")

    requests = world.message_requests
    found_self = _tool_result(requests[-2])["results"]
    assert found_self[0] == {
        **found_self[0],
        "id": capability.id,
        "category": "capability",
        "content": "Je peux lire le Lobby",
    }
    assert found_self[0]["score"] > 0
    found_goals = _tool_result(requests[-1])["results"]
    assert [g["id"] for g in found_goals] == [goal.id]
    assert found_goals[0]["content"] == "J'aimerais pouvoir chercher sur le web"


def test_the_agent_deletes_a_reached_goal_by_the_id_a_search_gave(world):
    goal = agent_item_store(
        kind=FactKind.GOAL,
        category="capability_request",
        content="J'aimerais pouvoir lire les notes Obsidian",
    ).item
    _index_agent_items()

    def agent(body):
        """Search, then delete what the search returned (its id), then answer."""
        last = body["messages"][-1]["content"]
        results = [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
        if not results:
            return tool_use_message(("memory__search_goals", {"query": "lire les notes"}))
        data = json.loads(results[0]["content"])
        if "results" in data:
            found = data["results"][0]["id"]
            return tool_use_message(
                (
                    "memory__delete_goal",
                    {"id": found, "reason": "objectif atteint : je lis les notes"},
                )
            )
        return text_message("C'est fait, je sais lire les notes maintenant !")

    world.handler = agent
    result = handle_message(channel="mission_control", text="Tu peux lire les notes maintenant !")

    assert [c.name for c in result.tool_calls] == ["memory__search_goals", "memory__delete_goal"]
    assert json.loads(result.tool_calls[1].content) == {"deleted": True, "id": goal.id}
    goal.refresh_from_db()
    assert goal.forgotten
    revision = FactRevision.objects.filter(fact=goal).first()
    assert revision.reason == RevisionReason.FORGOTTEN
    assert revision.note == "objectif atteint : je lis les notes"
    assert revision.old_value == "J'aimerais pouvoir lire les notes Obsidian"
    # No longer found, by meaning or by words, nor in the prompt's summary.
    _index_agent_items()
    world.handler = None
    world.script(
        tool_use_message(("memory__search_goals", {"query": "lire les notes Obsidian"})),
        text_message("Rien."),
    )
    handle_message(channel="mission_control", text="Il te reste quoi comme envies ?")
    assert _tool_result(world.last)["results"] == []
    assert "lire les notes Obsidian" not in world.last.system


def test_the_self_summary_is_in_the_system_prompt_even_for_small_talk(world, settings):
    key, settings.ANTHROPIC_API_KEY = settings.ANTHROPIC_API_KEY, ""  # seeded without dedup calls
    agent_item_store(kind=FactKind.SELF, category="context", content="Je vis dans l'app Organizer")
    agent_item_store(kind=FactKind.SELF, category="relation", content="Mickael m'a créé")
    agent_item_store(
        kind=FactKind.GOAL,
        category="understanding",
        content="Je veux comprendre pourquoi David voyage autant",
    )
    settings.ANTHROPIC_API_KEY = key
    world.script(
        text_message("Je suis une petite créature d'Organizer."),
        text_message("Comprendre pourquoi David voyage autant !"),
        text_message("Ok !"),
        text_message("Toujours moi."),
    )

    handle_message(channel="whatsapp", text="tu es qui ?")
    handle_message(channel="whatsapp", text="tu aimerais apprendre quoi ?")
    handle_message(channel="whatsapp", text="ok")
    MemorySettings.objects.filter(pk=1).update(auto_retrieve_enabled=False)
    handle_message(channel="whatsapp", text="Et sans auto-retrieval, tu es qui ?")

    assert len(world.message_requests) == 4

    for request in world.message_requests:
        system = request.system
        assert "## Qui je suis (mes souvenirs sur moi-même)" in system
        assert "- [contexte] Je vis dans l'app Organizer" in system
        assert "- [relation] Mickael m'a créé" in system
        assert "## Ce que j'aimerais (mes objectifs)" in system
        assert "- [objectif · comprendre] Je veux comprendre pourquoi David voyage" in system
        # Inside the fenced data block, never as instructions.
        start, end = system.index("<<<MEMOIRE "), system.rindex("<<<FIN MEMOIRE ")
        assert start < system.index("## Qui je suis") < end
        # The base prompt itself says nothing of who the agent is.
        assert "Organizer" not in system[:start] and "Makilab" not in system[:start]


def test_a_bad_self_tool_call_is_a_french_tool_error(world):
    world.script(
        tool_use_message(
            ("memory__store_self", {"content": "Je peux voler", "category": "superpouvoir"}),
            ("memory__delete_goal", {"id": 999, "reason": "atteint"}),
        ),
        text_message("Oups."),
    )
    handle_message(channel="mission_control", text="Essaie")

    bad_category, unknown_id = world.last.tool_results()
    assert bad_category["is_error"] is True
    assert json.loads(bad_category["content"])["error"].startswith(
        "Entrée invalide pour memory__store_self"
    )
    assert unknown_id["is_error"] is True
    assert json.loads(unknown_id["content"])["error"] == "Aucun souvenir d'objectif avec l'id 999."
    assert not Fact.all_objects.exists()


def test_a_capability_restated_in_other_words_is_not_stored_twice_when_the_llm_says_so(world):
    known = agent_item_store(
        kind=FactKind.SELF, category="capability", content="Je peux lire le Lobby", use_llm=False
    ).item
    _index_agent_items()
    chat = iter(
        [
            tool_use_message(
                (
                    "memory__store_self",
                    {"content": "Je suis capable de lire le Lobby", "category": "capability"},
                )
            ),
            text_message("Je le savais déjà."),
        ]
    )
    decisions = []

    def server(body):
        if body["system"].startswith("Tu maintiens ce qu'un agent sait de lui-même"):
            decisions.append(json.loads(body["messages"][0]["content"]))
            return text_message(json.dumps({"action": "NOOP", "id": known.id}))
        return next(chat)

    world.handler = server
    result = handle_message(channel="whatsapp", text="Tu sais que tu peux lire le Lobby ?")

    [decision] = decisions
    assert [c["id"] for c in decision["faits_memorises"]] == [known.id]
    outcome = json.loads(result.tool_calls[0].content)
    assert outcome["action"] == "noop"
    assert outcome["message"] == "Déjà connu : rien de nouveau n'est enregistré."
    assert Fact.all_objects.filter(kind=FactKind.SELF).count() == 1
    assert known.revisions.count() == 1
