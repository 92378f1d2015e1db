"""The chat API: POST /api/agent/chat — validate, call the agent loop, shape the answer —
and POST /api/agent/chat/stream, the same as server-sent events."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from django.http import StreamingHttpResponse
from django.utils.log import log_response
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from agent.api.serializers import (
    ChatInputSerializer,
    ChatOutputSerializer,
    chat_result_data,
    retrieval_data,
)
from agent.chat_replay import chat_key
from agent.exceptions import (
    ChatAnswerGone,
    ChatStillAnswering,
    LlmError,
    LlmNotConfigured,
    LlmUnavailable,
)
from agent.loop import handle_message, handle_message_events
from memory.api.messages import idempotency_key_scoped
from memory.api.views import ERRORS, ErrorSerializer, MemoryApi
from memory.exceptions import MemoryServiceError
from memory.services.messages_record import IdempotencyKeyReused

logger = logging.getLogger(__name__)

STREAM_FAILED_MESSAGE = "Erreur interne pendant la réponse : le message reste enregistré."


def _chat_key(request: Request, data: dict) -> str:
    return chat_key(idempotency_key_scoped(request, data["idempotency_key"]))


def _refusal_response(exc: MemoryServiceError) -> Response:
    """A keyed request sent again that is not answered: 409 (another request with the key,
    or the first still answering), 410 (what it answered was forgotten since)."""
    code = status.HTTP_410_GONE if isinstance(exc, ChatAnswerGone) else status.HTTP_409_CONFLICT
    return Response({"message": str(exc), "extra": {}}, status=code)


_REFUSALS = (ChatAnswerGone, ChatStillAnswering, IdempotencyKeyReused)


def _llm_error_response(exc: LlmError, request: Request) -> Response:
    """503 when the LLM is unavailable (no key included), 502 when it refused the request."""
    code = (
        status.HTTP_503_SERVICE_UNAVAILABLE
        if isinstance(exc, LlmUnavailable)
        else status.HTTP_502_BAD_GATEWAY
    )
    response = Response(
        {"message": str(exc), "extra": {"message_ids": list(exc.message_ids)}}, status=code
    )
    if isinstance(exc, LlmNotConfigured):
        # No key is a configuration state, not a failure: one warning line, where Django
        # logs every 5xx as an ERROR (it skips a response logged already), as a bad Host
        # is one (makilab.logfilters.ClientErrorAsWarning). Anthropic down stays an ERROR.
        log_response(
            "%s: %s",
            response.reason_phrase,
            request.path,
            response=response,
            request=request._request,
            level="warning",
        )
    return response


class ChatApi(MemoryApi):
    name = "Parler à l'agent"
    throttle_scope = "chat"  # every call is an LLM call: REST_FRAMEWORK's "chat" rate

    @extend_schema(
        operation_id="agent_chat",
        summary="Parler à l'agent",
        description=(
            "Enregistre le message (toujours, une seule fois), lance l'auto-retrieval, appelle "
            "le LLM avec les outils de mémoire et renvoie la réponse, les souvenirs injectés et "
            "l'usage. Plusieurs messages d'un même canal arrivés en quelques secondes reçoivent "
            "une seule réponse (``coalesced``). 503 sans LLM configuré ou si Anthropic reste "
            "indisponible : le message reste enregistré et cherchable (``extra.message_ids``)."
        ),
        request=ChatInputSerializer,
        responses={
            200: ChatOutputSerializer,
            **ERRORS,
            502: OpenApiResponse(ErrorSerializer, description="Anthropic a refusé la requête."),
            409: OpenApiResponse(
                ErrorSerializer,
                description="Clé d'idempotence déjà utilisée pour un autre message, ou envoi "
                "avec cette clé encore en cours.",
            ),
            410: OpenApiResponse(
                ErrorSerializer,
                description="Envoi déjà traité avec cette clé, mais son message ou sa réponse "
                "a été oublié depuis : rien n'est renvoyé.",
            ),
            503: OpenApiResponse(
                ErrorSerializer, description="Aucun LLM configuré, ou Anthropic indisponible."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        body = ChatInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            result = handle_message(
                channel=data["channel"],
                text=data["message"],
                source=data["source"],
                author=data.get("author") or request.user.get_username(),
                idempotency_key=_chat_key(request, data),
            )
        except LlmError as exc:
            return _llm_error_response(exc, request)
        except _REFUSALS as exc:
            return _refusal_response(exc)
        return Response(ChatOutputSerializer(chat_result_data(result)).data)


def sse_event(name: str, data: object) -> bytes:
    """One server-sent event: its name and its data as one line of JSON."""
    payload = json.dumps(data, ensure_ascii=False, default=str)
    return f"event: {name}\ndata: {payload}\n\n".encode()


class EventStreamRenderer(BaseRenderer):
    """Errors answered before the stream starts, for a client that accepts only SSE."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return sse_event("error", data)


def _event_data(name: str, payload: object) -> object:
    if name == "retrieval":
        return retrieval_data(payload)
    if name == "tool_call":
        return {"name": payload.name, "input": payload.input, "is_error": payload.is_error}
    if name == "done":
        return ChatOutputSerializer(chat_result_data(payload)).data
    return payload


class ChatStreamApi(MemoryApi):
    name = "Parler à l'agent en flux"
    throttle_scope = "chat"
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        operation_id="agent_chat_stream",
        summary="Parler à l'agent, réponse en flux (SSE)",
        description=(
            "Comme POST /api/agent/chat, mais la réponse est un flux ``text/event-stream`` : "
            "``saved`` {message_ids}, ``retrieval`` (souvenirs injectés), ``text`` {delta} au fil "
            "de l'écriture, ``tool_call`` par outil utilisé, puis ``done`` (le même objet que "
            "/chat) ou ``error`` {message, extra}. Le texte des tours qui appellent un outil est "
            "aussi transmis : la réponse finale est ``done.reply``. Sans LLM configuré : 503 "
            "avant tout flux."
        ),
        request=ChatInputSerializer,
        responses={
            (200, "text/event-stream"): OpenApiResponse(description="Le flux d'événements."),
            **ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="Clé d'idempotence déjà utilisée pour un autre message, ou envoi "
                "avec cette clé encore en cours.",
            ),
            410: OpenApiResponse(
                ErrorSerializer, description="Le message ou la réponse de cet envoi a été oublié."
            ),
            503: OpenApiResponse(ErrorSerializer, description="Aucun LLM configuré."),
        },
    )
    def post(self, request: Request):
        body = ChatInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        events = handle_message_events(
            channel=data["channel"],
            text=data["message"],
            source=data["source"],
            author=data.get("author") or request.user.get_username(),
            idempotency_key=_chat_key(request, data),
        )
        try:
            first = next(events)  # the message is saved here, before any byte is sent
        except LlmError as exc:
            return _llm_error_response(exc, request)
        except _REFUSALS as exc:
            return _refusal_response(exc)

        def stream() -> Iterator[bytes]:
            yield sse_event(*first)
            try:
                for name, payload in events:
                    yield sse_event(name, _event_data(name, payload))
            except LlmError as exc:
                extra = {"message_ids": list(exc.message_ids)}
                yield sse_event("error", {"message": str(exc), "extra": extra})
            except Exception:
                logger.exception("chat stream failed")
                yield sse_event("error", {"message": STREAM_FAILED_MESSAGE, "extra": {}})
            finally:
                # A client gone mid-answer: the loop closes the LLM stream at once, which
                # records the usage it consumed (agent.client.llm_stream).
                events.close()

        response = StreamingHttpResponse(stream(), content_type="text/event-stream; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
        return response
