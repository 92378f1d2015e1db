"""The digest's prompt stays within the model's context, whatever the rooms say (QA 8b).

Each message is cut at compaction's bound (COMPACTION_MESSAGE_CHARS), and a batch takes
only the oldest messages whose lines fit compaction's transcript bound: the rest is the
next batch's. Forty pasted articles were sent whole, refused as too long at every run."""

from __future__ import annotations

import json
import re

import pytest

from agent.compaction import COMPACTION_MESSAGE_CHARS, COMPACTION_TRANSCRIPT_CHARS
from agent.digest import digest_prompt
from memory.models import Message
from memory.services.digest import digest_request
from memory.services.jobs import job_run
from memory.services.messages import message_save
from tests.fakes.anthropic import error_reply

pytestmark = pytest.mark.django_db

ROOM = "lobby"
ARTICLE = "Compte rendu de la réunion de quartier sur les travaux de la place. " * 700
# The model's context in characters (≈ 4 a token, 200,000 tokens).
CONTEXT_CHARS = 800_000


def _lines(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    return re.search(r"<messages_des_salons>\n(.*)\n</messages_des_salons>", prompt, re.S)[1]


def _model(body: dict):
    prompt = body["messages"][-1]["content"]
    if len(prompt) > CONTEXT_CHARS:
        return error_reply(400, "invalid_request_error", "prompt is too long")
    return json.dumps({"facts": []})


def test_a_long_message_is_cut_in_the_prompt_at_compactions_bound(db):
    said = message_save(channel=ROOM, role="user", author="eve", content=ARTICLE)

    prompt = digest_prompt([said])

    text = " ".join(ARTICLE.split())
    assert text[:COMPACTION_MESSAGE_CHARS] + "…" in prompt
    assert text[: COMPACTION_MESSAGE_CHARS + 1] not in prompt


def test_long_room_messages_are_digested_in_prompts_the_model_accepts(lobby):
    lobby.handler = _model
    for n in range(40):  # ≈ 48,000 characters each, under the messages API's 50,000
        message_save(channel=ROOM, role="user", author="eve", content=f"{n} {ARTICLE}")
    message_save(channel=ROOM, role="user", author="david", content="Je pars en Grèce en juin")

    assert job_run(digest_request(send=False).id) == "done"

    assert Message.objects.filter(observed=True, digested_at__isnull=True).count() == 0


def test_a_batch_takes_only_the_messages_whose_lines_fit_the_transcript_bound(lobby):
    lobby.handler = _model
    author = "a" * 128  # the longest author: each line ≈ 2,150 characters, 40 ≈ 86,000
    for n in range(40):
        message_save(channel=ROOM, role="user", author=author, content=f"{n} " + "x" * 1990)

    assert job_run(digest_request(send=False).id) == "done"

    sizes = [len(_lines(r.json)) for r in lobby.message_requests]
    assert len(sizes) == 2 and max(sizes) <= COMPACTION_TRANSCRIPT_CHARS
    assert Message.objects.filter(observed=True, digested_at__isnull=True).count() == 0
