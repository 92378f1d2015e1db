"""QA: a forget request whose answer fails after the forget ran stays in memory, naming the topic.

The owner asks « Oublie le mariage de Marie à Lisbonne, la cérémonie à Belém »; the LLM
calls memory__forget (the wedding exchange is forgotten), then Anthropic fails on the
call that would write the reply (500, 529, timeout: LlmUnavailable, the chat's 503).
agent.loop excludes the request from memory (forget_exchange_exclude) only after the
reply is saved, so on this path it never is: the request — the topic in the owner's
words — is found by text and semantic search, is sent in the history of the channel's
next request, and the next reply's extraction job reads it (its open exchange), free to
store the forgotten wedding again. README: « The request to forget and its reply never
feed memory (retrieval, search, extraction, compaction, the history): they name the
topic. » Expected: the request excluded as soon as the forget ran, whatever happens to
the reply.
"""

from __future__ import annotations

import json

import pytest

from agent.client import LlmUnavailable
from agent.loop import handle_message
from memory.models import Job, Message
from memory.services.indexing import KIND_MESSAGE, index_rows
from memory.services.search import memory_search
from tests.agent.exchanges import past_exchange
from tests.fakes.anthropic import (  # noqa: F401
    fake_anthropic,
    server_error,
    text_message,
    tool_use_message,
)

pytestmark = pytest.mark.django_db

WEDDING = "Le mariage de Marie à Lisbonne est le 14 juin, la cérémonie à Belém"
TOPIC = "le mariage de Marie à Lisbonne"
REQUEST = "Oublie le mariage de Marie à Lisbonne, la cérémonie à Belém"


@pytest.fixture
def world(vector_store, local_embedder, fake_anthropic, settings):  # noqa: F811
    settings.AGENT_COALESCE_SECONDS = 0
    settings.ANTHROPIC_MAX_RETRIES = 0
    return fake_anthropic


def test_the_forget_request_never_feeds_memory_when_the_reply_fails(
    world, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    wedding = past_exchange("whatsapp", WEDDING, "Note-le bien !")
    world.script(
        tool_use_message(("memory__forget", {"topic": TOPIC})),
        text_message(json.dumps({"ids": [f"message:{wedding.id}"]})),  # the forget's judge
        server_error(),  # the reply's call: Anthropic down
    )
    with capture(execute=True), pytest.raises(LlmUnavailable) as failed:
        handle_message(channel="mission_control", text=REQUEST)
    assert not Message.objects.filter(pk=wedding.pk).exists()  # the forget ran
    [asked_id] = failed.value.message_ids
    index_rows(KIND_MESSAGE, [asked_id], force=True)  # a late indexing task changes nothing

    found = {
        (mode, h.id)
        for mode in ("text", "semantic")
        for h in memory_search(query="cérémonie à Belém", mode=mode)
        if h.kind in ("message", "exchange")
    }
    world.script(text_message("Bonjour !"))
    with capture(execute=True):
        handle_message(channel="mission_control", text="Salut")
    history = json.dumps(world.last.messages, ensure_ascii=False)
    extracts = [j.payload["message_ids"] for j in Job.objects.filter(kind="extract")]

    assert Message.all_objects.get(pk=asked_id).memory_excluded
    assert not found, found
    assert "Belém" not in history
    assert not [ids for ids in extracts if asked_id in ids], extracts
