"""The thin Anthropic wrapper: the only module that imports the SDK.

- ``llm_available()``: is an LLM configured (ANTHROPIC_API_KEY)?
- ``llm_call()`` / ``llm_message()``: one Messages API call, its usage and cost
  recorded in ``llm_usage``.
- ``llm_json()``: one call whose text answer is parsed as JSON.

Retries are the SDK's own: exponential backoff with jitter (0.5 s, 1 s, 2 s...,
capped at 8 s, Retry-After honoured) on 529 overloaded, other 5xx, 429, 408,
timeouts and connection errors, ANTHROPIC_MAX_RETRIES times. What is still
failing after them becomes ``LlmUnavailable`` with a French message; a request
Anthropic refuses (400...) becomes ``LlmRequestRejected``. Never call these
inside ``transaction.atomic``: SQLite would stay write-locked for the whole call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agent.exceptions import (
    LlmError,
    LlmInvalidJson,
    LlmNotConfigured,
    LlmRequestRejected,
    LlmUnavailable,
)
from agent.llm_answers import answer_complete, message_text, parse_json_answer
from agent.stream_usage import cut_usage_record

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import Message

    from agent.models import LlmUsage

logger = logging.getLogger(__name__)

__all__ = [
    "LlmCall",
    "LlmError",
    "LlmInvalidJson",
    "LlmNotConfigured",
    "LlmRequestRejected",
    "LlmUnavailable",
    "get_client",
    "llm_available",
    "llm_call",
    "llm_json",
    "llm_message",
    "llm_stream",
]

LLM_NOT_CONFIGURED_MESSAGE = (
    "Aucun LLM n'est configuré (ANTHROPIC_API_KEY absente) : le message est enregistré "
    "et reste cherchable, mais l'agent ne peut pas y répondre."
)
LLM_UNAVAILABLE_MESSAGE = (
    "Le LLM (Anthropic) est indisponible : {detail}. Réessayez dans un moment."
)
LLM_AUTH_MESSAGE = "Anthropic a refusé la clé d'API (HTTP {status}) : vérifiez ANTHROPIC_API_KEY."
LLM_REJECTED_MESSAGE = "Anthropic a refusé la requête (HTTP {status}) : {detail}"
LLM_UNREADABLE_MESSAGE = LLM_UNAVAILABLE_MESSAGE.format(detail="réponse illisible")
STREAM_CUT_MESSAGE = LLM_UNAVAILABLE_MESSAGE.format(detail="la réponse a été interrompue en cours")

_clients: dict[tuple, Any] = {}
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class LlmCall:
    message: Message
    usage: LlmUsage


def llm_available() -> bool:
    """True when an Anthropic key is configured."""
    return bool(settings.ANTHROPIC_API_KEY)


def get_client() -> anthropic.Anthropic:
    """The SDK client for the current settings (one per distinct configuration).

    Raises LlmNotConfigured without a key.
    """
    if not llm_available():
        raise LlmNotConfigured(LLM_NOT_CONFIGURED_MESSAGE)
    config = (
        settings.ANTHROPIC_API_KEY,
        settings.ANTHROPIC_BASE_URL or None,
        float(settings.ANTHROPIC_TIMEOUT_S),
        int(settings.ANTHROPIC_MAX_RETRIES),
    )
    client = _clients.get(config)
    if client is None:
        with _clients_lock:
            client = _clients.get(config)
            if client is None:
                import anthropic

                api_key, base_url, timeout, max_retries = config
                client = anthropic.Anthropic(
                    api_key=api_key,
                    base_url=base_url,
                    timeout=timeout,
                    max_retries=max_retries,
                )
                _clients[config] = client
    return client


def clients_reset() -> None:
    """Close the cached SDK clients (tests, settings changes)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        try:
            client.close()
        except Exception:  # closing is best effort
            logger.debug("closing an Anthropic client failed", exc_info=True)


def _translate(exc: Exception) -> LlmError:
    """An SDK error as one of ours, with a French message."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return LlmUnavailable(
            LLM_UNAVAILABLE_MESSAGE.format(
                detail=f"pas de réponse en {settings.ANTHROPIC_TIMEOUT_S:g} s"
            )
        )
    if isinstance(exc, anthropic.APIConnectionError):
        return LlmUnavailable(LLM_UNAVAILABLE_MESSAGE.format(detail="connexion impossible"))
    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return LlmUnavailable(LLM_AUTH_MESSAGE.format(status=exc.status_code))
    if isinstance(exc, anthropic.APIStatusError):
        detail = _error_detail(exc)
        if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
            return LlmUnavailable(
                LLM_UNAVAILABLE_MESSAGE.format(detail=f"HTTP {exc.status_code}, {detail}")
            )
        return LlmRequestRejected(
            LLM_REJECTED_MESSAGE.format(status=exc.status_code, detail=detail)
        )
    if isinstance(exc, anthropic.APIResponseValidationError):
        return LlmUnavailable(LLM_UNAVAILABLE_MESSAGE.format(detail="réponse illisible"))
    return LlmUnavailable(LLM_UNAVAILABLE_MESSAGE.format(detail=type(exc).__name__))


def _error_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return f"{error.get('type', 'error')}: {str(error['message'])[:200]}"
    return str(getattr(exc, "message", "") or type(exc).__name__)[:200]


def llm_call(
    *,
    system: str,
    messages: list[dict],
    purpose: str,
    tools: list[dict] | None = None,
    tool_choice: dict | None = None,
    max_tokens: int | None = None,
    channel: str = "",
    retrieval_tokens: int = 0,
    retrieval_id: int | None = None,
    model: str | None = None,
) -> LlmCall:
    """One Messages API call; its usage is recorded (one llm_usage row) and returned.

    Raises LlmNotConfigured, LlmUnavailable (after the retries) or LlmRequestRejected.
    """
    import anthropic

    client = get_client()
    request = _request(system, messages, tools, tool_choice, max_tokens, model)
    try:
        message = client.messages.create(**request)
    except anthropic.AnthropicError as exc:
        logger.warning("Anthropic call (%s) failed: %s", purpose, exc)
        raise _translate(exc) from exc
    _message_check(message, purpose)
    usage = _usage_record(message, request, purpose, channel, retrieval_tokens, retrieval_id)
    return LlmCall(message=message, usage=usage)


def llm_stream(
    *,
    system: str,
    messages: list[dict],
    purpose: str,
    tools: list[dict] | None = None,
    tool_choice: dict | None = None,
    max_tokens: int | None = None,
    channel: str = "",
    retrieval_tokens: int = 0,
    retrieval_id: int | None = None,
    model: str | None = None,
) -> Generator[str, None, LlmCall]:
    """``llm_call`` streamed: yields the answer's text as it comes, returns the LlmCall.

    Use ``call = yield from llm_stream(...)``. The usage row comes from the
    stream's own events (message_start: input tokens, message_delta: output
    tokens). A stream that does not finish (the connection drops, an error event,
    the reader closes the generator) still records what it consumed: the input
    tokens of its message_start and an estimate of the output from the text
    received, marked ``estimated``; then ``LlmUnavailable`` is raised (or
    GeneratorExit goes on). The same errors as ``llm_call`` are raised before the
    first event (retries only happen there).
    """
    import anthropic

    client = get_client()
    request = _request(system, messages, tools, tool_choice, max_tokens, model)
    stream = None
    usage_args = (request, purpose, channel, retrieval_tokens, retrieval_id)
    try:
        with client.messages.stream(**request) as stream:
            yield from stream.text_stream
            try:
                message = stream.get_final_message()
            except AssertionError:
                # No message_start came: a 200 whose body is not a stream of a message
                # (``{}``, a gateway's JSON error). Nothing was consumed.
                message = None
    except GeneratorExit:  # the reader went away mid-answer (a closed page)
        cut_usage_record(stream, *usage_args)
        raise
    except Exception as exc:
        started = cut_usage_record(stream, *usage_args)
        logger.warning("Anthropic stream (%s) failed: %s", purpose, exc)
        if started:  # the request was accepted, then the answer stopped: not a refusal
            raise LlmUnavailable(STREAM_CUT_MESSAGE) from exc
        if isinstance(exc, anthropic.AnthropicError):
            raise _translate(exc) from exc
        raise
    if message is None:
        logger.warning("Anthropic stream (%s): a 200 answer that is not a message", purpose)
        raise LlmUnavailable(LLM_UNREADABLE_MESSAGE)
    if message.stop_reason is None:  # no message_delta: the body ended early
        cut_usage_record(stream, *usage_args)
        raise LlmUnavailable(STREAM_CUT_MESSAGE)
    _message_check(message, purpose)
    usage = _usage_record(message, *usage_args)
    return LlmCall(message=message, usage=usage)


def _message_check(message: Any, purpose: str) -> None:
    """Raise LlmUnavailable unless ``message`` is a Messages API message.

    The SDK builds its Message without validating the body: a 200 that is not a
    message (``{}``, an error object sent with 200 by a gateway) comes back with
    ``content`` None. Transient for the callers: the chat answers a 503, a job backs
    off and runs again (an extraction must not end "done" with no facts).
    """
    if getattr(message, "type", None) == "message" and isinstance(
        getattr(message, "content", None), list
    ):
        return
    logger.warning(
        "Anthropic call (%s): a 200 answer that is not a message (type %r)",
        purpose,
        getattr(message, "type", None),
    )
    raise LlmUnavailable(LLM_UNREADABLE_MESSAGE)


def _request(
    system: str,
    messages: list[dict],
    tools: list[dict] | None,
    tool_choice: dict | None,
    max_tokens: int | None,
    model: str | None,
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": model or settings.ANTHROPIC_MODEL,
        "max_tokens": int(max_tokens or settings.ANTHROPIC_MAX_TOKENS),
        "system": system,
        "messages": messages,
    }
    if tools:
        request["tools"] = tools
        if tool_choice:
            request["tool_choice"] = tool_choice
    return request


def _usage_record(
    message: Any,
    request: dict,
    purpose: str,
    channel: str,
    retrieval_tokens: int,
    retrieval_id: int | None,
) -> LlmUsage:
    from agent.usage import usage_record

    return usage_record(
        model=message.model or request["model"],
        purpose=purpose,
        channel=channel,
        input_tokens=message.usage.input_tokens if message.usage else 0,
        output_tokens=message.usage.output_tokens if message.usage else 0,
        retrieval_tokens=retrieval_tokens,
        retrieval_id=retrieval_id,
    )


def llm_message(
    *,
    system: str,
    messages: list[dict],
    purpose: str,
    tools: list[dict] | None = None,
    max_tokens: int | None = None,
    channel: str = "",
    retrieval_tokens: int = 0,
    retrieval_id: int | None = None,
) -> Message:
    """``llm_call`` returning only the SDK's Message."""
    return llm_call(
        system=system,
        messages=messages,
        purpose=purpose,
        tools=tools,
        max_tokens=max_tokens,
        channel=channel,
        retrieval_tokens=retrieval_tokens,
        retrieval_id=retrieval_id,
    ).message


def llm_json(
    *,
    system: str,
    prompt: str,
    purpose: str,
    max_tokens: int | None = None,
    channel: str = "",
) -> object:
    """One call whose text answer is parsed as JSON (see ``parse_json_answer``).

    Raises LlmNotConfigured, LlmUnavailable, LlmRequestRejected or LlmInvalidJson.
    """
    message = llm_message(
        system=system,
        messages=[{"role": "user", "content": prompt}],
        purpose=purpose,
        max_tokens=max_tokens,
        channel=channel,
    )
    return parse_json_answer(message_text(answer_complete(message, purpose=purpose)))
