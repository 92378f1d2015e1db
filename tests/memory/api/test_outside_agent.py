"""An outside agent runs a whole conversation through the HTTP API only.

A scripted client (httpx against the live server, with nothing but its API
token) records a conversation on one channel, message by message as a
gateway would: it asks for the context of each user message while recording
it, runs a tool, records the tool's result and its reply. The memory works
behind it as for our own agent: the exchange is indexed, the durable
extraction job reads the reply and the tool result (the fake Anthropic server
plays the extraction LLM), and the facts are stored. On another channel the
same client then gets context for a question and sees its earlier messages
and facts come back; the calls are in the retrieval log. Then it forgets the
topic (dry run, then the preview's ids) and records the request and its reply
as excluded: no channel, search or tool gets the shoulder back.
"""

from __future__ import annotations

import json

import httpx
import pytest
from rest_framework.authtoken.models import Token

from agent.prompts import EXTRACTION_SYSTEM_PROMPT
from memory.models import MemoryRetrieval
from memory.services.forgetting_judge import FORGET_JUDGE_PROMPT
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db(transaction=True)

SKI = "Je me suis cassé l'épaule gauche au ski à Luchon"
KINE = "Trouve-moi un créneau de kiné pour l'épaule"
TOOL_RESULT = "agenda : kiné chez Dr Baptiste lundi 9h30"
QUESTION = "Comment va mon épaule ?"
FACTS = {
    "facts": [
        {
            "key": "blessure_epaule",
            "value": "Mickael s'est cassé l'épaule gauche au ski à Luchon",
            "type": "event",
            "subjects": ["mickael", "blessure"],
        },
        {"key": "kine_epaule", "value": "Kiné chez le Dr Baptiste le lundi à 9h30"},
    ]
}


@pytest.fixture
def service(
    live_server,
    vector_store,
    local_embedder,
    fake_anthropic,
    eager_tasks,
    settings,
):
    """The running service: its worker runs jobs inline; the (fake) LLM extracts, judges forgets."""
    from memory.services.retrieval import retrieval_warm

    settings.AGENT_COALESCE_SECONDS = 0

    def llm(body: dict):
        system = body.get("system")
        system = system if isinstance(system, str) else json.dumps(system, ensure_ascii=False)
        prompt = json.dumps(body["messages"], ensure_ascii=False)
        if system.startswith(EXTRACTION_SYSTEM_PROMPT[:40]) and TOOL_RESULT in prompt:
            return text_message(json.dumps(FACTS, ensure_ascii=False))
        if system == FORGET_JUDGE_PROMPT:
            # A faithful judge: the candidates that speak of the shoulder.
            candidates = json.loads(body["messages"][-1]["content"])["souvenirs"]
            ids = [c["id"] for c in candidates if "paule" in c["texte"]]
            return text_message(json.dumps({"ids": ids}))
        return text_message(json.dumps({"facts": []}))

    fake_anthropic.handler = llm
    retrieval_warm()  # as serve does when it starts
    return live_server.url


@pytest.fixture
def client(service, django_user_model):
    """The outside agent: an HTTP client holding its API token, nothing else."""
    token = Token.objects.create(user=django_user_model.objects.create_user(username="gateway"))
    with httpx.Client(
        base_url=f"{service}/api/memory",
        headers={"Authorization": f"Token {token.key}"},
        timeout=60,
    ) as http:
        yield http


def _ok(response: httpx.Response) -> dict | list:
    assert response.status_code in (200, 201), response.text
    return response.json()


def _conversation_on_a(client: httpx.Client) -> int:
    """Channel A: a conversation, as a WhatsApp gateway with its own LLM would run it."""
    first = _ok(client.post("/context", json={"message": SKI, "channel": "wa", "record": True}))
    [ski_id] = first["message_ids"]
    _ok(client.post("/messages", json={"channel": "wa", "role": "assistant", "content": "Aïe !"}))
    second = _ok(client.post("/context", json={"message": KINE, "channel": "wa", "record": True}))
    # The same channel's last exchange is still in the agent's history: not injected again.
    assert f"message:{ski_id}" not in [m["id"] for m in second["memories"]]
    turn = {
        "idempotency_key": "wa-turn-2",
        "messages": [
            {"channel": "wa", "source": "tool", "content": TOOL_RESULT},
            {"channel": "wa", "role": "assistant", "content": "C'est réservé pour lundi."},
        ],
    }
    recorded = _ok(client.post("/messages", json=turn))
    # The gateway's retry after a timeout: the same ids, nothing stored twice.
    retried = _ok(client.post("/messages", json=turn))
    assert retried == {**recorded, "replayed": True}
    return ski_id


def test_a_scripted_client_sees_its_earlier_conversation_come_back_on_another_channel(
    client, fake_anthropic
):
    ski_id = _conversation_on_a(client)

    # The extraction read the tool's result and stored the facts.
    facts = _ok(client.get("/recent-facts"))
    assert {"blessure_epaule", "kine_epaule"} <= {f["key"] for f in facts}
    assert {f["channel"] for f in facts if f["key"] == "kine_epaule"} == {"wa"}

    # --- Channel B: another runtime of the same agent asks about the shoulder.
    context = _ok(client.post("/context", json={"message": QUESTION, "channel": "cli"}))
    memories = {m["id"]: m for m in context["memories"]}
    # Its earlier exchange on channel A, and the fact extracted from it, with their scores.
    assert memories[f"message:{ski_id}"]["channel"] == "wa"
    [fact] = [m for m in memories.values() if m["text"].startswith("blessure epaule :")]
    assert fact["kind"] == "fact" and fact["channel"] == "wa"
    assert all(0 < m["score"] <= 1 for m in (fact, memories[f"message:{ski_id}"]))
    assert "Luchon" in context["prompt_block"]
    assert context["tokens_added"] > 0

    # Search with filters finds the messages of channel A; the calls are logged.
    found = _ok(client.get("/search", params={"q": "épaule ski", "mode": "text", "channel": "wa"}))
    assert str(ski_id) in [hit["id"] for hit in found["results"] if hit["kind"] == "message"]
    found = _ok(client.get("/search", params={"q": "mon épaule au ski", "mode": "semantic"}))
    assert any(hit["channel"] == "wa" for hit in found["results"])
    # The log is the owner's (the agent's token: 403); its rows are there.
    assert client.get("/retrievals").status_code == 403
    log = list(MemoryRetrieval.objects.values_list("channel", flat=True))
    assert set(log) == {"wa", "cli"} and len(log) == 3


def test_a_scripted_client_forgets_a_topic_and_no_channel_gets_it_back(client):
    _conversation_on_a(client)
    before = _ok(client.post("/context", json={"message": QUESTION, "channel": "cli"}))
    assert "Luchon" in before["prompt_block"]

    # The owner asks the gateway to forget: dry run first, then exactly what it showed.
    plan = _ok(client.post("/forget", json={"topic": "épaule", "dry_run": True}))
    assert plan["selection"] == "llm" and plan["counts"]["facts"] == 2
    assert plan["counts"]["exchanges"] >= 1
    done = _ok(client.post("/forget", json={"topic": "épaule", "ids": plan["ids"]}))
    assert done["counts"] == plan["counts"]
    # The request and its reply are recorded, never feeding memory.
    forget_turn = [
        {"channel": "wa", "content": "Oublie tout sur mon épaule"},
        {
            "channel": "wa",
            "role": "assistant",
            "content": "C'est oublié : ton épaule.",
            "memory_excluded": True,
        },
    ]
    _ok(client.post("/messages", json={"messages": forget_turn}))

    after = _ok(client.post("/context", json={"message": QUESTION, "channel": "cli"}))
    assert "paule" not in after["prompt_block"] and "Luchon" not in after["prompt_block"]
    assert not [m for m in after["memories"] if "paule" in m["text"]]
    recent = {f["key"] for f in _ok(client.get("/recent-facts"))}
    assert not {"blessure_epaule", "kine_epaule"} & recent
    assert _ok(client.get("/search", params={"q": "épaule", "mode": "text"}))["results"] == []
