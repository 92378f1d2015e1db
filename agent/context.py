"""What each chat request of an answer carries besides its tool exchange.

The system prompt (with the one memory block: the agent's self and goals, the
channel's summary, what auto-retrieval recalled, within block_max_tokens) and the
turns (the channel's history, then the messages being answered). When a tool
forgets mid-answer (memory__forget, a delete), both are rebuilt before the next
request, and what the answer's earlier tool calls returned is withdrawn: what the
forget took reaches no later request (tool_exchange_withdraw keeps every
tool_use paired with its tool_result, as the Messages API requires). The agent loop
does the same for a forget committed elsewhere while the answer runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.models import Message, MessageRole

SYSTEM_PREFIX = "[Message système] "
# What a tool call that ran before a forget returns in the requests after it.
WITHDRAWN_RESULT = "Résultat retiré : un oubli a eu lieu depuis cet appel."


@dataclass
class RequestContext:
    system: str
    turns: list[dict]  # the history, then the messages being answered
    retrieval_tokens: int  # the memory block's estimate, everything in it counted


def request_context(
    *, channel: str, before_id: int, text: str, retrieval=None, summary: str = ""
) -> RequestContext:
    """The system prompt and turns of a chat request answering ``text`` (the messages
    from ``before_id`` on). ``retrieval``: the auto-retrieval (its block holds
    ``summary``), or None (the block then holds the self, goals and summary)."""
    from agent.prompts import memory_block_build, system_prompt_build
    from memory.services.formatting import estimate_tokens

    block = memory_block_build(retrieval=retrieval, summary=summary)
    turns = history_build(channel=channel, before_id=before_id)
    if turns and turns[-1]["role"] == "user":
        turns[-1] = {"role": "user", "content": f"{turns[-1]['content']}\n\n{text}"}
    else:
        turns.append({"role": "user", "content": text})
    return RequestContext(
        system=system_prompt_build(channel=channel, memory_block=block),
        turns=turns,
        retrieval_tokens=estimate_tokens(block.strip()),
    )


def context_after_forget(
    *, channel: str, before_id: int, text: str, retrieval=None
) -> RequestContext:
    """``request_context`` read again after a tool forgot: the block keeps only what is
    still in memory (retrieval.refresh), the summary and the history are read again."""
    summary = latest_summary(channel)
    if retrieval is not None:
        from memory.services.retrieval.refresh import block_refresh

        block_refresh(retrieval, summary=summary)
    return request_context(
        channel=channel, before_id=before_id, text=text, retrieval=retrieval, summary=summary
    )


def outcome_forgot(outcome) -> bool:
    """Whether this tool call (an agent.tools.ToolOutcome) took something from memory."""
    from agent.tools import TOOLS

    tool = TOOLS.get(outcome.name)
    return bool(tool and tool.forgets) and not outcome.is_error and not outcome.data.get("dry_run")


def tool_exchange_withdraw(tail: list[dict], ran: list[tuple[str, object]]) -> list[dict]:
    """The answer's tool exchange so far, without what it could quote of the forgotten.

    ``tail``: its assistant (tool_use) and user (tool_result) turns; ``ran``: the
    (tool_use id, outcome) of its last turn, in order, or none for a forget made
    outside the answer (every call ran before it). Every call that ran before
    the last forget, forgetting tools aside (their results name nothing taken; a dry
    run's preview does, and is withdrawn),
    keeps its tool_use with an empty input and its tool_result with
    WITHDRAWN_RESULT; the assistant's text between calls is dropped.
    """
    from agent.tools import TOOLS

    last = max(
        (i for i, (_, outcome) in enumerate(ran) if outcome_forgot(outcome)), default=len(ran)
    )
    kept = {use_id for use_id, _ in ran[last + 1 :]}
    for turn in tail:
        for block in turn["content"]:
            tool = TOOLS.get(block.get("name", "")) if block.get("type") == "tool_use" else None
            # A forget's own answer names nothing it took; a dry run's lists it all: withdrawn.
            if tool is not None and tool.forgets and not (block.get("input") or {}).get("dry_run"):
                kept.add(block["id"])
    withdrawn = []
    for turn in tail:
        content = []
        for block in turn["content"]:
            kind = block.get("type")
            if kind == "text":
                continue
            if kind == "tool_use" and block["id"] not in kept:
                block = {**block, "input": {}}
            elif kind == "tool_result" and block["tool_use_id"] not in kept:
                block = {"type": "tool_result", "tool_use_id": block["tool_use_id"]}
                block["content"] = WITHDRAWN_RESULT
            content.append(block)
        withdrawn.append({**turn, "content": content})
    return withdrawn


def history_build(*, channel: str, before_id: int) -> list[dict]:
    """The channel's history (memory.selectors.channel_history) as alternating Messages API turns."""
    from memory.selectors import channel_history

    turns: list[dict] = []
    for row in channel_history(channel=channel, before_id=before_id):
        role = "assistant" if row.role == MessageRole.ASSISTANT else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + turn_text(row)
        else:
            turns.append({"role": role, "content": turn_text(row)})
    return turns


def turn_text(message: Message) -> str:
    """A message as the LLM reads it: a system message says so."""
    if message.role == MessageRole.SYSTEM:
        return f"{SYSTEM_PREFIX}{message.content}"
    return message.content


def latest_summary(channel: str) -> str:
    """The channel's last compaction summary: it stands for the history older than
    the turns sent (conversation context, in the memory block)."""
    from memory.selectors import channel_summary_latest

    summary = channel_summary_latest(channel=channel)
    return summary.content if summary else ""
