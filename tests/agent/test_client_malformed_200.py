"""Anthropic (or a gateway before it) answering 200 with a body that is not a message:
``{}``, or an error object sent with 200. The SDK builds its Message without validating
the body (``content`` None); agent.client refuses it as LlmUnavailable ("réponse
illisible"), so the chat answers a French 503 and an extraction is retried, not ended
"done" with no facts."""

from __future__ import annotations

import json

import pytest

from agent import client as llm_client
from agent.client import LlmUnavailable, llm_call, llm_stream
from agent.extraction_jobs import extraction_job_enqueue
from agent.models import LlmUsage
from memory.models import Fact, Job, JobState, Message
from memory.services.jobs import job_run
from memory.services.messages import message_save
from tests.fakes.anthropic import FakeReply, text_message

pytestmark = pytest.mark.django_db

NOT_A_MESSAGE = {
    "empty": {},
    "error-with-200": {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    },
}
KINDS = sorted(NOT_A_MESSAGE)
BROTHER = json.dumps(
    {"facts": [{"key": "brother_city", "value": "David habite à Toulouse", "type": "fact"}]},
    ensure_ascii=False,
)
REQUEST = {"system": "Tu es un test.", "messages": [{"role": "user", "content": "Bonjour"}]}


@pytest.fixture
def no_retries(settings):
    settings.ANTHROPIC_MAX_RETRIES = 0


@pytest.mark.parametrize("kind", KINDS)
def test_llm_call_refuses_a_200_that_is_not_a_message(fake_anthropic, no_retries, kind):
    fake_anthropic.script(FakeReply(status=200, body=NOT_A_MESSAGE[kind]))

    with pytest.raises(LlmUnavailable) as caught:
        llm_call(**REQUEST, purpose="chat")

    assert str(caught.value) == llm_client.LLM_UNREADABLE_MESSAGE
    assert "réponse illisible" in str(caught.value)
    assert LlmUsage.objects.count() == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_answered_with_a_json_body_is_unreadable_not_an_assertion(
    fake_anthropic, no_retries, kind
):
    """A gateway answering the stream request with one JSON body: no message_start."""
    fake_anthropic.script(FakeReply(status=200, body=NOT_A_MESSAGE[kind], streamed=False))

    with pytest.raises(LlmUnavailable) as caught:
        list(llm_stream(**REQUEST, purpose="chat"))

    assert str(caught.value) == llm_client.LLM_UNREADABLE_MESSAGE


@pytest.mark.parametrize("kind", KINDS)
def test_the_chat_answers_a_french_503_not_a_500(world, no_retries, client, staff_user, kind):
    client.raise_request_exception = False
    client.force_login(staff_user)
    world.script(FakeReply(status=200, body=NOT_A_MESSAGE[kind]))

    response = client.post(
        "/api/agent/chat",
        {"channel": "whatsapp", "message": "Tu es là ?"},
        content_type="application/json",
    )

    assert response.status_code == 503, (response.status_code, response.content[:200])
    assert "indisponible" in response.json()["message"]
    assert Message.objects.filter(content="Tu es là ?").count() == 1


@pytest.mark.parametrize("kind", KINDS)
def test_an_extraction_is_retried_not_done_empty(world, no_retries, kind):
    question = message_save(
        channel="whatsapp", role="user", content="Mon frère David habite à Toulouse."
    )
    reply = message_save(
        channel="whatsapp", role="assistant", content="Noté !", reply_to_id=question.id
    )
    job = extraction_job_enqueue(message_ids=[question.id], reply_id=reply.id, channel="whatsapp")
    world.script(FakeReply(status=200, body=NOT_A_MESSAGE[kind]), text_message(BROTHER))

    assert job_run(job.pk) not in ("done", "failed")  # backed off
    Job.objects.filter(pk=job.pk, state=JobState.QUEUED).update(run_after=None)
    assert job_run(job.pk) == "done"

    assert Fact.objects.filter(key="brother_city").exists()
