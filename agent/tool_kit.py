"""What every memory__* tool is made of: its context, its outcome, its definition, and the
schema pieces and wording the tool modules share (agent.tools, agent.tools_memory,
agent.tools_self)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from memory.models import Actor

MAX_QUERY_CHARS = 500


@dataclass(frozen=True)
class ToolContext:
    """Who calls and from where: the channel and the user messages being answered."""

    channel: str
    message_ids: tuple[int, ...] = ()
    actor: str = Actor.AGENT


@dataclass
class ToolOutcome:
    name: str
    input: dict
    content: str
    is_error: bool = False
    # Whether this result carries outside information worth a fact extraction
    # (notes, e-mails, web pages). Memory tools return memory: re-extracting it
    # would only re-store what is already there.
    feeds_extraction: bool = False
    data: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict
    run: Callable[[dict, ToolContext], dict]
    feeds_extraction: bool = False
    # Takes something from memory (unless a dry run): the answer's next request is rebuilt.
    forgets: bool = False

    def definition(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def schema(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


LIMIT = {"type": "integer", "minimum": 1, "maximum": 20}
QUERY = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS}
DATE = {"type": "string", "format": "date", "maxLength": 40}


def relative_time(moment: datetime | None, *, now: datetime | None = None) -> str:
    """A French relative time ("il y a 3 jours", "le 28 février"), the retrieval's wording."""
    from memory.services.formatting import relative_time_fr

    if moment is None:
        return ""
    return relative_time_fr(moment, now=now or timezone.now(), tz=timezone.get_current_timezone())
