"""Reads of the agent: the chat transcript of a channel, with what each reply used."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from agent.models import LlmUsage
from memory.models import Message, MessageRole


@dataclass
class ChatTurn:
    """The user messages a reply answered, the reply, and what the reply cost and used."""

    questions: list[Message] = field(default_factory=list)
    reply: Message | None = None
    memories: list[dict] = field(default_factory=list)
    tokens_added: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal("0")
    error: str = ""


def _attach_usage(turn: ChatTurn, rows: list[LlmUsage]) -> None:
    """The chat calls made between the turn's first question and its reply."""
    if turn.reply is None or not turn.questions:
        return
    start, end = turn.questions[0].created_at, turn.reply.created_at
    mine = [r for r in rows if start <= r.created_at <= end]
    turn.calls = len(mine)
    turn.input_tokens = sum(r.input_tokens for r in mine)
    turn.output_tokens = sum(r.output_tokens for r in mine)
    turn.cost_usd = sum((r.cost_usd for r in mine), Decimal("0"))
    retrieval = next((r.retrieval for r in mine if r.retrieval is not None), None)
    if retrieval is not None:
        turn.memories = list(retrieval.memories or [])
        turn.tokens_added = retrieval.tokens_added


def chat_turns(*, channel: str, limit: int = 30) -> list[ChatTurn]:
    """The channel's last ``limit`` messages grouped as turns, oldest first."""
    messages = list(
        Message.objects.filter(channel=channel)
        .exclude(role=MessageRole.TOOL)
        .order_by("-id")[:limit]
    )[::-1]
    if not messages:
        return []
    rows = list(
        LlmUsage.objects.filter(
            purpose="chat", channel=channel, created_at__gte=messages[0].created_at
        )
        .select_related("retrieval")
        .order_by("created_at", "id")
    )
    turns: list[ChatTurn] = []
    pending = ChatTurn()
    for message in messages:
        if message.role == MessageRole.ASSISTANT:
            pending.reply = message
            _attach_usage(pending, rows)
            turns.append(pending)
            pending = ChatTurn()
        else:
            pending.questions.append(message)
    if pending.questions:
        turns.append(pending)  # not answered (yet): no LLM, or it failed
    return turns
