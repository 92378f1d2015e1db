"""What one answer of the agent loop gives back: the reply, its retrieval, its usage."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agent.tools import ToolOutcome


@dataclass
class UsageTotals:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retrieval_tokens: int = 0
    cost_usd: Decimal = Decimal("0")
    model: str = ""
    usage_ids: list[int] = field(default_factory=list)

    def add(self, row) -> None:
        self.calls += 1
        self.input_tokens += row.input_tokens
        self.output_tokens += row.output_tokens
        self.retrieval_tokens += row.retrieval_tokens
        self.cost_usd += row.cost_usd
        self.model = row.model
        self.usage_ids.append(row.id)

    def as_dict(self) -> dict:
        return {
            "calls": self.calls,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "retrieval_tokens": self.retrieval_tokens,
            "cost_usd": str(self.cost_usd),
        }


@dataclass
class ChatResult:
    reply: str
    retrieval_id: int | None
    usage: UsageTotals
    channel: str = ""
    message_ids: list[int] = field(default_factory=list)
    reply_id: int | None = None
    retrieval: Any = None  # memory.services.retrieval.RetrievalResult | None
    tool_calls: list[ToolOutcome] = field(default_factory=list)
    stop_reason: str = ""
    # Given back to a request sent again with its idempotency key (agent.chat_replay).
    replayed: bool = False

    @property
    def coalesced(self) -> bool:
        return len(self.message_ids) > 1
