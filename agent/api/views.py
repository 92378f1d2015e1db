"""The chat API: POST /api/agent/chat — validate, call the agent loop, shape the answer."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from agent.api.serializers import ChatInputSerializer, ChatOutputSerializer, chat_result_data
from agent.exceptions import LlmError, LlmUnavailable
from agent.loop import handle_message
from memory.api.views import ERRORS, ErrorSerializer, MemoryApi


def _llm_error_response(exc: LlmError) -> Response:
    """503 when the LLM is unavailable (no key included), 502 when it refused the request."""
    code = (
        status.HTTP_503_SERVICE_UNAVAILABLE
        if isinstance(exc, LlmUnavailable)
        else status.HTTP_502_BAD_GATEWAY
    )
    return Response(
        {"message": str(exc), "extra": {"message_ids": list(exc.message_ids)}}, status=code
    )


class ChatApi(MemoryApi):
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
            )
        except LlmError as exc:
            return _llm_error_response(exc)
        return Response(ChatOutputSerializer(chat_result_data(result)).data)
