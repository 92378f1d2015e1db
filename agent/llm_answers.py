"""What an LLM's answer holds: its text, and the JSON value in it (no SDK here)."""

from __future__ import annotations

import json
import re
from typing import Any

from agent.exceptions import LlmInvalidJson

LLM_INVALID_JSON_MESSAGE = "Le LLM n'a pas répondu en JSON valide ({detail})."
LLM_EMPTY_MESSAGE = "réponse vide"

# At most this many '{' / '[' are tried as the start of the JSON value in a
# chatty answer: a hostile answer full of brackets costs a bounded time.
JSON_START_ATTEMPTS = 20
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


def message_text(message: Any) -> str:
    """The text blocks of an answer, joined (tool_use and thinking blocks left out), as text
    the memory can store (text_storable)."""
    parts = [block.text for block in message.content or [] if getattr(block, "type", "") == "text"]
    return text_storable("\n".join(part for part in parts if part).strip())


ANSWER_CUT_MESSAGE = (
    "La réponse du LLM ({purpose}) a été coupée par sa limite de tokens : rien n'en est "
    "gardé, le travail sera refait."
)


def answer_complete(message: Any, *, purpose: str) -> Any:
    """``message``, unless the LLM stopped at its output cap (LlmAnswerCut): QA, a digest's
    JSON cut there stored no fact and marked its batch digested, an extraction's stored
    nothing, a compaction kept a summary cut mid-sentence and its messages compacted."""
    if getattr(message, "stop_reason", None) == "max_tokens":
        from agent.exceptions import LlmAnswerCut

        raise LlmAnswerCut(ANSWER_CUT_MESSAGE.format(purpose=purpose))
    return message


def text_storable(value: Any) -> Any:
    """``value`` (a text, or lists and dicts of them) without what no stored or sent text
    may hold: a NUL (the model refuses it: QA, the reply was lost, the API blamed the
    owner's request) and a lone UTF-16 surrogate (no UTF-8 holds it: the next request
    re-sending it raised), the latter as U+FFFD."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "")
        if any("\ud800" <= c <= "\udfff" for c in value):
            value = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
        return value
    if isinstance(value, list):
        return [text_storable(item) for item in value]
    if isinstance(value, dict):
        return {key: text_storable(item) for key, item in value.items()}
    return value


def parse_json_answer(text: str) -> object:
    """The JSON value in an LLM's text answer.

    Accepts bare JSON, JSON inside a ```json fence, and JSON preceded or followed
    by prose. Raises LlmInvalidJson otherwise. NaN/Infinity are refused.
    """
    text = (text or "").strip()
    if not text:
        raise LlmInvalidJson(LLM_INVALID_JSON_MESSAGE.format(detail=LLM_EMPTY_MESSAGE))
    candidates = [match.group(1).strip() for match in _FENCE.finditer(text)]
    candidates.append(text)
    decoder = json.JSONDecoder(parse_constant=_refuse_constant)
    error = "aucun objet JSON"
    for candidate in candidates:
        try:
            return decoder.decode(candidate)
        except (ValueError, RecursionError) as exc:
            error = str(exc)[:120]
        # JSON inside prose: the longest value that decodes from a '{' or '['
        # ("voir [1] : [{...}]" gives the list of facts, not [1]).
        best: tuple[int, object] | None = None
        attempts = 0
        index = 0
        while attempts < JSON_START_ATTEMPTS:
            starts = [i for i in (candidate.find("{", index), candidate.find("[", index)) if i >= 0]
            if not starts:
                break
            start = min(starts)
            attempts += 1
            try:
                value, end = decoder.raw_decode(candidate, start)
            except (ValueError, RecursionError):
                index = start + 1
                continue
            if best is None or end - start > best[0]:
                best = (end - start, value)
            index = end
        if best is not None:
            return best[1]
    raise LlmInvalidJson(LLM_INVALID_JSON_MESSAGE.format(detail=error))


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")
