"""A streamed answer records what it consumed even when it does not finish.

The stream's own usage events are the source: message_start carries the input
tokens, message_delta the output tokens. A stream cut before its message_delta
(network drop, an error event, the reader gone) records the real input tokens
and an estimate of the output tokens from the text received, marked
``estimated``; /costs adds it like any other call.
"""

from __future__ import annotations

import pytest

from agent.client import STREAM_CUT_MESSAGE, LlmRequestRejected, LlmUnavailable, llm_stream
from agent.models import LlmUsage, UsageDay
from tests.fakes.anthropic import cut_stream, error_reply, text_message

pytestmark = pytest.mark.django_db

ANSWER = "Bonjour, voici une longue réponse qui arrive morceau par morceau."
INPUT_TOKENS = 1200
OUTPUT_TOKENS = 300
# message_start, content_block_start, then two text deltas of 8 characters.
CUT_AFTER = 4


def _stream():
    return llm_stream(
        system="Tu es un test.",
        messages=[{"role": "user", "content": "Bonjour"}],
        purpose="chat",
        channel="mission_control",
    )


def _reply():
    return text_message(ANSWER, input_tokens=INPUT_TOKENS, output_tokens=OUTPUT_TOKENS)


def _drain(generator) -> tuple[list[str], object]:
    received = []
    try:
        while True:
            received.append(next(generator))
    except StopIteration as stop:
        return received, stop.value


def test_a_complete_stream_records_the_usage_of_its_events(fake_anthropic):
    fake_anthropic.script(_reply())
    received, call = _drain(_stream())
    assert "".join(received) == ANSWER
    row = LlmUsage.objects.get()
    assert (row.input_tokens, row.output_tokens, row.estimated) == (
        INPUT_TOKENS,
        OUTPUT_TOKENS,
        False,
    )
    assert call.usage == row


@pytest.mark.parametrize("error_type", [None, "overloaded_error"])
def test_a_stream_cut_midway_records_its_input_and_an_estimated_output(fake_anthropic, error_type):
    fake_anthropic.script(cut_stream(_reply(), after_events=CUT_AFTER, error_type=error_type))
    received = []
    with pytest.raises(LlmUnavailable) as caught:
        for delta in _stream():
            received.append(delta)
    assert "".join(received) == ANSWER[:16]
    if error_type is None:
        assert str(caught.value) == STREAM_CUT_MESSAGE
    row = LlmUsage.objects.get()
    assert row.input_tokens == INPUT_TOKENS  # message_start's, exact
    assert 0 < row.output_tokens < OUTPUT_TOKENS  # what the 16 characters cost, estimated
    assert row.estimated is True
    assert row.cost_usd > 0
    day = UsageDay.objects.get()
    assert (day.calls, day.input_tokens) == (1, INPUT_TOKENS)


def test_a_reader_that_goes_away_still_records_what_was_consumed(fake_anthropic):
    fake_anthropic.script(_reply())
    stream = _stream()
    assert next(stream) == ANSWER[:8]
    stream.close()  # the browser closed the page: the generator is closed mid-answer
    row = LlmUsage.objects.get()
    assert row.input_tokens == INPUT_TOKENS
    assert row.output_tokens > 0 and row.estimated is True


def test_a_stream_refused_before_its_first_event_records_nothing(fake_anthropic):
    fake_anthropic.script(error_reply(400, "invalid_request_error", "mauvaise requête"))
    with pytest.raises(LlmRequestRejected):
        _drain(_stream())
    assert LlmUsage.objects.count() == 0


def test_a_chat_left_mid_answer_records_its_usage(fake_anthropic, vector_store, settings):
    """The chat stream's reader goes away (the page is closed): the loop closes the LLM
    stream at once, and /costs' daily totals hold what it consumed."""
    from agent.loop import handle_message_events

    settings.AGENT_COALESCE_SECONDS = 0
    fake_anthropic.script(_reply())
    events = handle_message_events(channel="mission_control", text="Raconte")
    for name, _ in events:
        if name == "text":
            break
    events.close()

    row = LlmUsage.objects.get()
    assert (row.purpose, row.input_tokens, row.estimated) == ("chat", INPUT_TOKENS, True)
    assert UsageDay.objects.get().input_tokens == INPUT_TOKENS


def test_a_client_leaving_the_chat_stream_endpoint_has_its_usage_recorded(
    fake_anthropic, vector_store, settings, staff_user
):
    """POST /api/agent/chat/stream, the client reads one piece of the answer and goes away:
    the server closes the response, and the usage is on /costs before anything else runs."""
    from django.core.signals import request_finished
    from django.db import close_old_connections
    from rest_framework.test import APIRequestFactory, force_authenticate

    from agent.api.views import ChatStreamApi

    settings.AGENT_COALESCE_SECONDS = 0
    fake_anthropic.script(_reply())
    request = APIRequestFactory().post(
        "/api/agent/chat/stream", {"channel": "mission_control", "message": "Raconte"}, "json"
    )
    force_authenticate(request, user=staff_user)
    response = ChatStreamApi.as_view()(request)
    chunks = iter(response.streaming_content)
    while b"event: text" not in next(chunks):
        pass
    # What the WSGI server does when the client is gone; the test keeps its connection.
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)

    row = LlmUsage.objects.get()
    assert (row.input_tokens, row.estimated) == (INPUT_TOKENS, True)
    assert UsageDay.objects.get().input_tokens == INPUT_TOKENS


def test_costs_counts_the_interrupted_answers_as_estimated(fake_anthropic, staff_client):
    fake_anthropic.script(_reply(), cut_stream(_reply(), after_events=CUT_AFTER))
    _drain(_stream())
    with pytest.raises(LlmUnavailable):
        _drain(_stream())

    day = UsageDay.objects.get()
    assert (day.calls, day.estimated_calls, day.input_tokens) == (2, 1, 2 * INPUT_TOKENS)
    page = staff_client.get("/costs/")
    assert page.context["totals"]["estimated_calls"] == 1
    assert "dont 1 réponse(s) interrompue(s)" in page.content.decode()
