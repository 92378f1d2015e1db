"""agent.client through the real anthropic SDK against the fake Messages API."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from agent.client import (
    LLM_NOT_CONFIGURED_MESSAGE,
    LlmInvalidJson,
    LlmNotConfigured,
    LlmRequestRejected,
    LlmUnavailable,
    llm_available,
    llm_call,
    llm_json,
    llm_message,
)
from agent.llm_answers import parse_json_answer
from agent.models import LlmUsage
from tests.fakes.anthropic import (
    error_reply,
    hang,
    overloaded,
    server_error,
    text_message,
    tool_use_message,
)

pytestmark = pytest.mark.django_db


def _ask(**kwargs):
    return llm_message(
        system="Tu es un test.",
        messages=[{"role": "user", "content": "Bonjour"}],
        purpose="chat",
        **kwargs,
    )


def test_it_is_unavailable_without_a_key(settings):
    settings.ANTHROPIC_API_KEY = ""
    assert llm_available() is False
    with pytest.raises(LlmNotConfigured) as caught:
        _ask()
    assert str(caught.value) == LLM_NOT_CONFIGURED_MESSAGE
    assert isinstance(caught.value, LlmUnavailable)
    assert LlmUsage.objects.count() == 0


def test_it_sends_the_request_to_the_configured_base_url_with_the_key(fake_anthropic, settings):
    settings.ANTHROPIC_MODEL = "claude-sonnet-4-6"
    fake_anthropic.script(text_message("Salut !", input_tokens=1200, output_tokens=300))

    message = _ask(max_tokens=77, channel="whatsapp")

    assert message.content[0].text == "Salut !"
    request = fake_anthropic.last
    # anthropic 2.x sends the api_key as a bearer token.
    assert request.headers["authorization"] == f"Bearer {fake_anthropic.api_key}"
    assert request.headers["anthropic-version"]
    assert request.json["model"] == "claude-sonnet-4-6"
    assert request.json["max_tokens"] == 77
    assert request.system == "Tu es un test."
    assert request.messages == [{"role": "user", "content": "Bonjour"}]
    assert "tools" not in request.json


def test_it_records_one_usage_row_with_its_cost(fake_anthropic, settings):
    settings.ANTHROPIC_MODEL = "claude-sonnet-4-6"
    fake_anthropic.script(text_message("ok", input_tokens=1_000_000, output_tokens=100_000))

    call = llm_call(
        system="s",
        messages=[{"role": "user", "content": "q"}],
        purpose="extraction",
        channel="mission_control",
    )

    usage = LlmUsage.objects.get()
    assert usage == call.usage
    assert usage.model == "claude-sonnet-4-6"
    assert usage.purpose == "extraction"
    assert usage.channel == "mission_control"
    assert (usage.input_tokens, usage.output_tokens) == (1_000_000, 100_000)
    # Sonnet 4.x: $3 per million input tokens, $15 per million output tokens.
    assert usage.cost_usd == Decimal("3") + Decimal("1.5")
    assert usage.retrieval_tokens == 0


def test_it_retries_an_overloaded_answer_then_succeeds(fake_anthropic):
    fake_anthropic.script(overloaded(), text_message("enfin"))

    message = _ask()

    assert message.content[0].text == "enfin"
    assert len(fake_anthropic.message_requests) == 2
    assert LlmUsage.objects.count() == 1


def test_it_gives_a_clear_error_when_anthropic_stays_overloaded(fake_anthropic, settings):
    settings.ANTHROPIC_MAX_RETRIES = 2
    fake_anthropic.script(*[overloaded(retry_after_ms=5) for _ in range(3)])

    with pytest.raises(LlmUnavailable) as caught:
        _ask()

    assert "indisponible" in str(caught.value)
    assert "529" in str(caught.value)
    assert len(fake_anthropic.message_requests) == 3
    assert LlmUsage.objects.count() == 0


def test_it_retries_server_errors(fake_anthropic):
    fake_anthropic.script(server_error(), text_message("ok"))
    assert _ask().content[0].text == "ok"
    assert len(fake_anthropic.message_requests) == 2


def test_a_hanging_server_ends_in_a_timeout_error(fake_anthropic, settings):
    settings.ANTHROPIC_TIMEOUT_S = 0.5
    settings.ANTHROPIC_MAX_RETRIES = 0
    fake_anthropic.script(hang())

    started = time.monotonic()
    with pytest.raises(LlmUnavailable) as caught:
        _ask()

    assert time.monotonic() - started < 5
    assert "pas de réponse en 0.5 s" in str(caught.value)


def test_a_refused_key_is_not_retried(fake_anthropic, settings):
    settings.ANTHROPIC_API_KEY = "sk-ant-wrong"
    with pytest.raises(LlmUnavailable) as caught:
        _ask()
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert len(fake_anthropic.message_requests) == 1


def test_a_rejected_request_is_not_retried(fake_anthropic):
    fake_anthropic.script(error_reply(400, "invalid_request_error", "prompt is too long"))
    with pytest.raises(LlmRequestRejected) as caught:
        _ask()
    assert "prompt is too long" in str(caught.value)
    assert len(fake_anthropic.message_requests) == 1


def test_tools_are_sent_and_tool_use_blocks_come_back(fake_anthropic):
    tool = {
        "name": "memory__search",
        "description": "cherche",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
    fake_anthropic.script(tool_use_message(("memory__search", {"query": "épaule"})))

    message = _ask(tools=[tool])

    assert fake_anthropic.last.tool_names == ["memory__search"]
    assert message.stop_reason == "tool_use"
    assert message.content[0].name == "memory__search"
    assert message.content[0].input == {"query": "épaule"}


def test_llm_json_reads_a_fenced_answer(fake_anthropic):
    fake_anthropic.script(text_message('Voici :\n```json\n[{"key": "a", "value": "b"}]\n```'))
    assert llm_json(system="s", prompt="p", purpose="dedup") == [{"key": "a", "value": "b"}]
    assert LlmUsage.objects.get().purpose == "dedup"


def test_llm_json_refuses_garbage(fake_anthropic):
    fake_anthropic.script(text_message("Je ne peux pas répondre en JSON, désolé."))
    with pytest.raises(LlmInvalidJson):
        llm_json(system="s", prompt="p", purpose="dedup")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]  ", [1, 2]),
        ('```\n{"a": "é"}\n```', {"a": "é"}),
        ('Bien sûr ! Voir [1] : [{"key": "x"}] voilà.', [{"key": "x"}]),
        ('{"decision": "ADD"}\nJ\'espère que ça aide.', {"decision": "ADD"}),
    ],
)
def test_parse_json_answer_finds_the_json_value(text, expected):
    assert parse_json_answer(text) == expected


@pytest.mark.parametrize(
    "text", ["", "pas de json", '{"a": NaN}', "[" * 5000, "{" * 30 + "}", '{"a": 1']
)
def test_parse_json_answer_raises_a_clear_error_on_garbage(text):
    with pytest.raises(LlmInvalidJson) as caught:
        parse_json_answer(text)
    assert "JSON valide" in str(caught.value)
