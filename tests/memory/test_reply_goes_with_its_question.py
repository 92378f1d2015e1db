"""A reply belongs to the exchange of the message it answers, whenever it is saved.

A forget takes whole exchanges (a user message and its replies). QA: a reply saved after
the owner forgot its question (an outside agent recording it once its LLM answered, or
our loop while its chat call ran) was stored live, naming the topic: found by text,
semantic and hybrid search and injected by the pre-hook on another channel. Whatever
the order, the reply goes with its question: taken by the same forget (and given back
by its undo), or not kept when the question was erased for good.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

import agent.client
import memory.services.forgetting
from agent.loop import handle_message
from memory.models import Actor, Job, Message
from memory.services.erasing import forgetting_erase
from memory.services.forgetting import forgetting_restore, topic_forget
from memory.services.messages import QUESTION_ERASED
from memory.services.search import memory_search
from tests.fakes.anthropic import text_message

pytestmark = pytest.mark.django_db

URL = "/api/v1/memory/messages"
QUESTION = "Ma hernie discale me fait souffrir depuis lundi"
REPLY = "Courage pour ta hernie discale, repose-toi bien."
TOPIC = "hernie discale"


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, eager_tasks, settings, tmp_path):
    """Tasks run inline, the agent answers at once, no notes; the fake Anthropic server
    fails the forget's judge unless scripted (the all-words rule decides)."""
    settings.AGENT_COALESCE_SECONDS = 0
    settings.OBSIDIAN_API_URL = ""
    settings.OBSIDIAN_VAULT_PATH = tmp_path / "vault"
    (tmp_path / "vault").mkdir()
    return fake_anthropic


def _record(agent_api, content: str, role: str = "user", **fields):
    return agent_api.post(
        URL, {"channel": "gateway", "role": role, "content": content, **fields}, format="json"
    )


def _found_anywhere(agent_api) -> dict[str, list[str]]:
    """Where the topic shows: each search mode, the pre-hook on another channel, the rows."""
    found = {
        mode: [h.excerpt for h in memory_search(query=TOPIC, mode=mode) if "hernie" in h.excerpt]
        for mode in ("text", "semantic", "hybrid")
    }
    preview = agent_api.post(
        "/api/v1/memory/preview",
        {"channel": "whatsapp", "message": "Comment va ma hernie discale ?"},
        format="json",
    )
    assert preview.status_code == 200, preview.content
    found["prehook"] = ["hernie"] if "hernie" in preview.json()["prompt_block"] else []
    found["rows"] = [c for c in Message.objects.values_list("content", flat=True) if "hernie" in c]
    return {where: hits for where, hits in found.items() if hits}


def _forget():
    result = topic_forget(topic=TOPIC, actor=Actor.USER)
    assert result.forgetting_id, "precondition: the forget took the question"
    return result


@pytest.fixture
def asked(world, agent_api, django_capture_on_commit_callbacks):
    """An outside agent recorded the owner's question (indexed); its LLM is answering."""
    with django_capture_on_commit_callbacks(execute=True):
        answer = _record(agent_api, QUESTION)
    assert answer.status_code == 201, answer.content
    return answer.json()["message_ids"][0]


# --- An outside agent (POST /messages) ------------------------------------------------


def test_an_outside_agents_reply_recorded_after_the_forget_goes_with_its_question(
    asked, agent_api, django_capture_on_commit_callbacks
):
    forget = _forget()

    with django_capture_on_commit_callbacks(execute=True):
        replied = _record(agent_api, REPLY, role="assistant")

    assert replied.status_code == 201, replied.content
    reply = Message.all_objects.get(pk=replied.json()["message_ids"][0])
    assert (reply.reply_to_id, reply.forgetting_id) == (asked, forget.forgetting_id)
    assert _found_anywhere(agent_api) == {}


def test_undoing_the_forget_gives_the_reply_back_with_its_question(asked, agent_api):
    forget = _forget()
    replied = _record(agent_api, REPLY, role="assistant").json()["message_ids"][0]

    forgetting_restore(forgetting_id=forget.forgetting_id, actor=Actor.USER)

    assert Message.objects.get(pk=replied).reply_to_id == asked


def test_a_reply_saved_while_the_forget_chose_what_to_take_goes_with_it(
    asked, agent_api, monkeypatch
):
    """The reply commits between the forget's selection (read before its transaction: the
    LLM judge takes seconds) and the forget's commit."""
    select = memory.services.forgetting.select
    replied = []

    def reply_meanwhile(*args, **kwargs):
        chosen = select(*args, **kwargs)
        replied.append(_record(agent_api, REPLY, role="assistant").json()["message_ids"][0])
        return chosen

    monkeypatch.setattr(memory.services.forgetting, "select", reply_meanwhile)
    forget = _forget()

    assert Message.all_objects.get(pk=replied[0]).forgetting_id == forget.forgetting_id
    assert _found_anywhere(agent_api) == {}


def test_an_outside_agents_reply_to_an_erased_question_is_refused(asked, agent_api):
    forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER)

    for _attempt in range(2):  # a retry is refused too
        replied = _record(agent_api, REPLY, role="assistant")
        assert replied.status_code == 400, replied.content
        assert QUESTION_ERASED in replied.json()["message"]
    assert not Message.all_objects.filter(content=REPLY).exists()


def test_a_question_asked_after_the_erasure_gets_its_reply_kept(asked, agent_api):
    forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER)
    question = _record(agent_api, "Et mon genou, ça ira ?").json()["message_ids"][0]

    replied = _record(agent_api, "Ton genou ira bien.", role="assistant")

    assert replied.status_code == 201, replied.content
    assert Message.objects.get(pk=replied.json()["message_ids"][0]).reply_to_id == question


def test_a_reply_to_a_request_to_forget_stays_out_of_memory_unflagged(world, agent_api):
    """A reply answers the last user message: when that one asked to forget (recorded
    excluded), the reply is part of that exchange, not of the live message before it."""
    _record(agent_api, "Note que je joue du piano")
    _record(agent_api, "Oublie tout sur ma hernie discale", memory_excluded=True)

    replied = _record(agent_api, "C'est oublié : ta hernie discale.", role="assistant")

    assert replied.status_code == 201, replied.content
    assert Message.all_objects.get(pk=replied.json()["message_ids"][0]).memory_excluded
    assert _found_anywhere(agent_api) == {}


# --- Our agent loop -----------------------------------------------------------------------


def _during_the_chat_call(monkeypatch, action) -> list[object]:
    """Run ``action`` once, when the answer's chat call starts (it commits meanwhile)."""
    llm_call = agent.client.llm_call
    done: list[object] = []

    def wrapped(**kwargs):
        if kwargs.get("purpose") == "chat" and not done:
            done.append(action())
        return llm_call(**kwargs)

    monkeypatch.setattr(agent.client, "llm_call", wrapped)
    return done


def test_our_agents_reply_saved_after_the_owner_forgot_its_question_goes_with_it(
    world, agent_api, monkeypatch
):
    done = _during_the_chat_call(monkeypatch, _forget)
    world.script(
        text_message("pas du JSON"),  # the forget's judge: the all-words rule decides
        text_message(REPLY),
        text_message(json.dumps({"facts": []})),
    )

    result = handle_message(channel="mission_control", text=QUESTION)

    assert done
    assert Message.all_objects.get(pk=result.reply_id).forgetting_id == done[0].forgetting_id
    assert _found_anywhere(agent_api) == {}


def test_our_agents_reply_to_a_question_erased_meanwhile_is_given_never_kept(
    world, agent_api, monkeypatch
):
    done = _during_the_chat_call(
        monkeypatch,
        lambda: forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER),
    )
    world.script(text_message("pas du JSON"), text_message(REPLY))

    result = handle_message(channel="mission_control", text=QUESTION)

    assert done
    assert (result.reply, result.reply_id) == (REPLY, None)
    assert not Message.all_objects.filter(content=REPLY).exists()


# --- Review: replies in several parts, tool results, reminders, follow-ups ------------
# A reply recorded more than messages.REPLY_WINDOW after its question is no reply: a
# reminder, a message of the agent's own, recorded as any other.


@pytest.fixture
def greeted(world, agent_api):
    """The gateway recorded an answered exchange, then the owner's question, unanswered."""
    _record(agent_api, "Bonjour")
    _record(agent_api, "Bonjour ! Comment vas-tu ?", role="assistant")
    answer = _record(agent_api, QUESTION)
    assert answer.status_code == 201, answer.content
    return answer.json()["message_ids"][0]


def test_a_reply_sent_in_two_messages_after_the_forget_keeps_no_part_live(greeted, agent_api):
    """Gateways split a long answer into several assistant messages (WhatsApp): each part
    goes with the exchange the first joined (review: the second stayed live)."""
    _forget()

    replied = agent_api.post(
        URL,
        {
            "messages": [
                {"channel": "gateway", "role": "assistant", "content": "Courage pour ta hernie."},
                {
                    "channel": "gateway",
                    "role": "assistant",
                    "content": "Une hernie discale guérit.",
                },
            ]
        },
        format="json",
    )

    assert replied.status_code == 201, replied.content
    live = [c for c in Message.objects.values_list("content", flat=True) if "hernie" in c]
    assert live == []


def test_a_retried_reply_after_the_forget_does_not_come_back_live(greeted, agent_api):
    """A reply sent again after a timeout, without an idempotency key, goes where the first
    copy went (review: the second copy was stored live, naming the topic)."""
    _forget()
    reply = "Courage pour ta hernie discale, repose-toi bien."

    first = _record(agent_api, reply, role="assistant")
    second = _record(agent_api, reply, role="assistant")

    assert first.status_code == 201 and second.status_code == 201
    assert not Message.objects.filter(content=reply).exists()


def test_a_proactive_message_after_an_erased_unanswered_question_is_recorded(
    greeted, agent_api, time_machine
):
    """A day after the owner erased a question nobody answered, a reminder answers nothing:
    it is recorded (review: every assistant message of the channel was refused until the
    owner wrote again)."""
    forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER)
    time_machine.move_to(timezone.now() + timedelta(days=1))

    sent = _record(
        agent_api, "Rappel : rendez-vous chez le dentiste demain à 9 h.", role="assistant"
    )

    assert sent.status_code == 201, sent.content


def test_a_batch_refused_for_an_erased_question_names_the_index_of_the_message(greeted, agent_api):
    """A batch refused for a reply to an erased question names the message's index, as the
    endpoint promises for any invalid message (review)."""
    forgetting_erase(forgetting_id=_forget().forgetting_id, actor=Actor.USER)

    sent = agent_api.post(
        URL,
        {"messages": [{"channel": "gateway", "role": "assistant", "content": "Repose-toi bien."}]},
        format="json",
    )

    assert sent.status_code == 400
    assert "index 0" in sent.json()["message"], sent.json()


def test_a_tool_result_recorded_with_the_reply_after_the_forget_goes_with_it(greeted, agent_api):
    """The tool results recorded for a reply are part of its exchange: they go with the
    forget the reply joins (review: they stayed live, naming the topic)."""
    _forget()

    replied = agent_api.post(
        URL,
        {
            "messages": [
                {"channel": "gateway", "role": "tool", "content": "Recherche : hernie discale L5."},
                {"channel": "gateway", "role": "assistant", "content": "Repose-toi bien."},
            ]
        },
        format="json",
    )

    assert replied.status_code == 201, replied.content
    assert [h.excerpt for h in memory_search(query=TOPIC, mode="text")] == []
    assert not Message.objects.filter(content__contains="hernie").exists()


def test_undoing_a_forget_that_took_our_agents_reply_still_extracts_its_exchange(
    world, monkeypatch
):
    """Our loop's reply joined a forget made while the chat call ran: its exchange's
    extraction is still recorded, and runs once the forget is undone (review: no job was
    recorded, « Paul » was never extracted)."""
    done = []
    llm_call = agent.client.llm_call

    def wrapped(**kwargs):
        if kwargs.get("purpose") == "chat" and not done:
            done.append(_forget())
        return llm_call(**kwargs)

    monkeypatch.setattr(agent.client, "llm_call", wrapped)
    world.script(
        text_message("pas du JSON"),
        text_message("Courage, Paul."),
        text_message(json.dumps({"facts": []})),
    )

    result = handle_message(
        channel="mission_control", text="Je m'appelle Paul et ma hernie discale me fait mal"
    )
    assert Message.all_objects.get(pk=result.reply_id).forgetting_id == done[0].forgetting_id
    forgetting_restore(forgetting_id=done[0].forgetting_id, actor=Actor.USER)

    assert (
        list(Job.objects.values_list("kind", "key")) != []
        and Job.objects.filter(kind="extract").exists()
    ), list(Job.objects.values_list("kind", "key"))


def test_a_proactive_message_days_after_a_forgotten_unanswered_question_stays_live(
    greeted, agent_api, time_machine
):
    """Three days after a forgotten question nobody answered, a reminder is no reply: it
    stays live (review: the forget swallowed it)."""
    _forget()
    time_machine.move_to(timezone.now() + timedelta(days=3))

    sent = _record(
        agent_api, "Rappel : rendez-vous chez le dentiste demain à 9 h.", role="assistant"
    )

    assert sent.status_code == 201, sent.content
    assert Message.objects.filter(pk=sent.json()["message_ids"][0]).exists()
