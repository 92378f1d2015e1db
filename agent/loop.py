"""The agent loop: one incoming message in, one reply out.

handle_message():
  save the user message (exactly once, whatever happens next)
  → coalesce with the other messages of the channel arriving within
    AGENT_COALESCE_SECONDS (they are answered once, on their combined text)
  → auto-retrieval on the combined text
  → system prompt: base prompt + date + tool guidance + the memory block (the
    channel's last summary inside it, within block_max_tokens: agent.context)
  → Messages API with the channel's recent history and the memory__* tools,
    tool calls run, up to AGENT_MAX_TURNS calls (the last without tools); after
    a tool that forgets, or a forget committed elsewhere (/memory, the API, MCP)
    since the answer started, the block, the history and the earlier tool
    results are rebuilt before the next call (agent.context)
  → save the reply → post-response tasks (fact extraction, compaction) on commit;
    the extraction reads every user message the reply closes, those an LLM
    outage left unanswered included (the channel's open exchange)
  → ChatResult(reply, retrieval id, usage).

Every LLM call writes an llm_usage row with the tokens the memory block added
flagged apart. Without an API key, LlmNotConfigured is raised after the message
is saved (and indexed: it stays searchable). LLM errors carry ``message_ids``,
the ids of the saved user messages.

``handle_message_events`` is the same loop as a stream of events (the text
deltas of each LLM turn, each tool call, the final result): the SSE endpoint
uses it; ``handle_message`` drains it without streaming.

Coalescing is per process (the embedded default runs one web process); with
several web processes, messages of one channel that reach different processes
are answered separately.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from django.conf import settings

from agent.chat_result import ChatResult, UsageTotals
from agent.coalescing import (
    answering,
    answering_others,
    coalesce_follow,
    coalesce_join_or_lead,
    coalesce_wait_and_close,
)
from agent.context import (
    context_after_forget,
    latest_summary,
    outcome_forgot,
    request_context,
    tool_exchange_withdraw,
    turn_text,
)
from agent.exceptions import LlmError, LlmNotConfigured
from agent.tools import ToolContext, ToolOutcome, tool_definitions, tool_run
from memory.models import Message, MessageRole, MessageSource
from memory.services.forgetting import forget_mark, forgotten_after

logger = logging.getLogger(__name__)

AGENT_AUTHOR = "makilab"
TURN_CAP_REPLY = (
    "Je n'ai pas réussi à terminer en {turns} étapes (recherches dans ma mémoire comprises). "
    "Peux-tu préciser ta demande ?"
)
EMPTY_REPLY = "Je n'ai pas de réponse à te donner."
# The stop reason of a message saved in an observed room: no answer by design.
OBSERVED_STOP_REASON = "observed"


# --- The loop ---------------------------------------------------------------------------


def handle_message(
    *,
    channel: str,
    text: str,
    source: str = MessageSource.USER,
    author: str | None = None,
    idempotency_key: str = "",
) -> ChatResult:
    """Answer one incoming message (see the module docstring)."""
    events = handle_message_events(
        channel=channel,
        text=text,
        source=source,
        author=author,
        stream=False,
        idempotency_key=idempotency_key,
    )
    while True:
        try:
            next(events)
        except StopIteration as stop:
            return stop.value


def handle_message_events(
    *,
    channel: str,
    text: str,
    source: str = MessageSource.USER,
    author: str | None = None,
    stream: bool = True,
    idempotency_key: str = "",
) -> Generator[tuple[str, Any], None, ChatResult]:
    """``handle_message`` as a stream of events; returns the ChatResult.

    Events, in order: ("saved", {"message_ids"}) once the message is saved and an
    LLM is configured (LlmNotConfigured is raised before it), ("retrieval", {...}),
    then per LLM turn ("text", {"delta"}) as the answer's text arrives (with
    ``stream``) and ("tool_call", {...}) per tool run, and ("done", ChatResult).
    A message coalesced into another request's batch only gets "saved" and "done".

    ``idempotency_key`` (agent.chat_replay.chat_key): the request sent again with it
    gets its answer back, or its saved message answered, never saved or paid twice;
    ChatStillAnswering, ChatAnswerGone and IdempotencyKeyReused are raised before the
    first event.
    """
    from agent.chat_replay import (
        chat_answer_record,
        chat_answering,
        chat_claim,
        chat_fingerprint,
        chat_message_save,
    )
    from memory.services.messages_record import ROLE_BY_SOURCE

    key = idempotency_key
    fingerprint = chat_fingerprint(channel=channel, text=text, source=source, author=author or "")
    with chat_answering(key):
        claim = chat_claim(key, fingerprint)
        if claim.replay is not None:
            yield "saved", {"message_ids": claim.replay.message_ids}
            yield "done", claim.replay
            return claim.replay
        message = claim.message or chat_message_save(
            key=key,
            fingerprint=fingerprint,
            channel=channel,
            role=ROLE_BY_SOURCE.get(MessageSource(source), MessageRole.USER),
            content=text,
            author=author or "",
            source=source,
        )
        result = yield from _message_answer(message, source=source, stream=stream)
        chat_answer_record(key, result)
        return result


def _message_answer(
    message: Message, *, source: str, stream: bool
) -> Generator[tuple[str, Any], None, ChatResult]:
    """The saved ``message`` answered (or coalesced into another request's answer)."""
    from agent.client import LLM_NOT_CONFIGURED_MESSAGE, llm_available

    if message.observed:
        # An observed room: the message is kept (and goes to `live`); the agent
        # does not answer there, LLM or not.
        yield "saved", {"message_ids": [message.id]}
        result = ChatResult(
            reply="",
            retrieval_id=None,
            usage=UsageTotals(),
            channel=message.channel,
            message_ids=[message.id],
            stop_reason=OBSERVED_STOP_REASON,
        )
        yield "done", result
        return result
    if not llm_available():
        error = LlmNotConfigured(LLM_NOT_CONFIGURED_MESSAGE)
        error.message_ids = (message.id,)
        raise error
    yield "saved", {"message_ids": [message.id]}

    window = float(settings.AGENT_COALESCE_SECONDS)
    if window <= 0:
        result = yield from _answer(
            channel=message.channel, messages=[message], source=source, stream=stream
        )
        yield "done", result
        return result
    batch, leader = coalesce_join_or_lead(message.channel, message, window)
    if not leader:
        result = coalesce_follow(batch)
        yield "done", result
        return result
    try:
        messages = coalesce_wait_and_close(message.channel, batch)
        batch.result = yield from _answer(
            channel=message.channel, messages=messages, source=source, stream=stream
        )
    except BaseException as exc:
        batch.error = exc
        raise
    finally:
        batch.done.set()
    yield "done", batch.result
    return batch.result


def _retrieve(*, text: str, channel: str, source: str, message_ids: list[int], summary: str = ""):
    """The auto-retrieval result, or None (skipped, not available, or failed).

    ``message_ids`` are the messages being answered: retrieval counts them and
    the history sent before them as already seen by the LLM. ``summary``: the
    channel's summary, put in the block within its budget.
    """
    try:
        from memory.services.retrieval import auto_retrieve
    except ImportError:
        return None
    try:
        return auto_retrieve(
            message=text, channel=channel, source=source, message_ids=message_ids, summary=summary
        )
    except Exception:  # retrieval must never block an answer
        logger.exception("auto-retrieval failed on %s", channel)
        return None


def _tool_result_block(tool_use_id: str, outcome: ToolOutcome) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": outcome.content}
    if outcome.is_error:
        block["is_error"] = True
    return block


def _extraction_message_ids(
    *, channel: str, message_ids: list[int], users: list[Message]
) -> list[int]:
    """The user messages the reply (not saved yet) closes: the channel's open exchange
    up to this batch (memory.services.messages_record._open_exchange: since its last reply,
    excluded and forgotten messages aside), then the batch's own.

    An LLM outage leaves a saved message without a reply: the next reply of the
    channel closes it, and its extraction reads it (the outage delays the work,
    never loses it), as the messages API does for an outside agent. Messages after
    the batch, or that another answer of this process is working on, are left to
    their own answer.
    """
    from memory.services.messages_record import _open_exchange

    top = max(message_ids)
    others = answering_others(message_ids)
    earlier = [
        m.id
        for m in _open_exchange(channel)
        if m.role == MessageRole.USER and m.id < top and m.id not in others
    ]
    return sorted({*earlier, *(m.id for m in users)})


def _answer(
    *, channel: str, messages: list[Message], source: str, stream: bool
) -> Generator[tuple[str, Any], None, ChatResult]:
    with answering([m.id for m in messages]):
        return (
            yield from _answer_batch(
                channel=channel, messages=messages, source=source, stream=stream
            )
        )


def _answer_batch(
    *, channel: str, messages: list[Message], source: str, stream: bool
) -> Generator[tuple[str, Any], None, ChatResult]:
    from agent.client import llm_call, llm_stream
    from agent.followups import exchange_followups_enqueue
    from agent.llm_answers import message_text, text_storable
    from memory.services.messages import QuestionErased, message_save

    # What was forgotten or erased before now is out of what this answer reads; a
    # forget committed after this mark (from /memory, the API, MCP, or one of the
    # answer's tools) rebuilds the context of its next request.
    mark = forget_mark()
    message_ids = [m.id for m in messages]
    combined = "\n\n".join(turn_text(m) for m in messages)
    # A batch holding a user message is a user batch, whoever led it: retrieval
    # runs on the user's words and the exchange feeds extraction.
    user_messages = [m for m in messages if m.source == MessageSource.USER]
    if user_messages:
        source = MessageSource.USER
    summary = latest_summary(channel)
    retrieval = _retrieve(
        text="\n\n".join(m.content for m in user_messages) or combined,
        channel=channel,
        source=source,
        message_ids=message_ids,
        summary=summary,
    )
    asked = {"channel": channel, "before_id": min(message_ids), "text": combined}
    context = request_context(**asked, retrieval=retrieval, summary=summary)
    # The tool exchange of this answer, after the history and the messages answered.
    tail: list[dict] = []
    # Read (and announced) only now: the retrieval's log row is written in the
    # background while the prompt is built, and its id waits for it.
    retrieval_id = getattr(retrieval, "retrieval_id", None)
    yield "retrieval", retrieval

    tools = tool_definitions()
    tool_context = ToolContext(channel=channel, message_ids=tuple(message_ids))
    usage = UsageTotals()
    outcomes: list[ToolOutcome] = []
    max_turns = int(settings.AGENT_MAX_TURNS)
    reply, stop_reason = "", ""
    try:
        for turn in range(1, max_turns + 1):
            last = turn == max_turns
            if forgotten_after(mark):
                # A forget committed since the last request (an owner's on /memory, the
                # API or MCP): what it took reaches no later request, as after a tool
                # that forgets; every earlier tool result is withdrawn.
                mark = forget_mark()
                context = context_after_forget(**asked, retrieval=retrieval)
                tail = tool_exchange_withdraw(tail, [])
            request = {
                "system": context.system,
                "messages": [*context.turns, *tail],
                "purpose": "chat",
                "tools": tools,
                # The last call may not ask for more tools: it must answer.
                "tool_choice": {"type": "none"} if last else None,
                "channel": channel,
                "retrieval_tokens": context.retrieval_tokens,
                "retrieval_id": retrieval_id,
            }
            if stream:
                deltas = llm_stream(**request)
                try:
                    while True:
                        try:
                            delta = next(deltas)
                        except StopIteration as stop:
                            call = stop.value
                            break
                        yield "text", {"delta": delta}
                finally:
                    # A reader gone mid-answer closes us: close the stream now, so it
                    # records what it consumed (agent.client.llm_stream).
                    deltas.close()
            else:
                call = llm_call(**request)
            usage.add(call.usage)
            answer = call.message
            stop_reason = answer.stop_reason or ""
            tool_uses = [b for b in answer.content if getattr(b, "type", "") == "tool_use"]
            if stop_reason != "tool_use" or not tool_uses or last:
                reply = message_text(answer)
                if last and tool_uses and not reply:
                    reply = TURN_CAP_REPLY.format(turns=max_turns)
                break
            tail.append(
                {
                    "role": "assistant",
                    # As text every later request can send (a lone surrogate made it raise).
                    "content": text_storable(
                        [b.to_dict(mode="json", exclude_none=True) for b in answer.content]
                    ),
                }
            )
            results, ran = [], []
            for block in tool_uses:
                outcome = tool_run(
                    name=block.name, tool_input=text_storable(block.input), context=tool_context
                )
                outcomes.append(outcome)
                ran.append((block.id, outcome))
                yield "tool_call", outcome
                results.append(_tool_result_block(block.id, outcome))
            tail.append({"role": "user", "content": results})
            if any(outcome_forgot(outcome) for _, outcome in ran):
                # What it took reaches no later request: block, history, earlier results.
                mark = forget_mark()
                context = context_after_forget(**asked, retrieval=retrieval)
                tail = tool_exchange_withdraw(tail, ran)
    except BaseException as exc:  # an LLM error, a stream's reader gone (GeneratorExit)
        if any(o.name == "memory__forget" for o in outcomes):
            # The forget ran and no reply will be saved: its request still never feeds
            # memory (QA: an LLM failing after the forget left « cérémonie à Belém » to the
            # search, the next history and the next extraction).
            from memory.services.forgetting import forget_exchange_exclude

            forget_exchange_exclude(message_ids=list(message_ids))
        if isinstance(exc, LlmError):
            exc.message_ids = tuple(message_ids)
        raise

    # Read before the reply is saved: it closes the channel's open exchange.
    extracted = _extraction_message_ids(
        channel=channel, message_ids=message_ids, users=user_messages
    )
    forgot = any(o.name == "memory__forget" for o in outcomes)
    answered = {
        "reply": reply or EMPTY_REPLY,
        "retrieval_id": retrieval_id,
        "usage": usage,
        "channel": channel,
        "message_ids": message_ids,
        "retrieval": retrieval,
        "tool_calls": outcomes,
        "stop_reason": stop_reason,
    }
    try:
        # It goes with the message it answers (message_save): taken by a forget that
        # took that message while the answer ran (QA: it stayed live, naming the topic).
        reply_message = message_save(
            channel=channel,
            role=MessageRole.ASSISTANT,
            content=answered["reply"],
            author=AGENT_AUTHOR,
            reply_to_id=message_ids[-1],
        )
    except QuestionErased:
        # Erased for good while the answer ran: the reply is given, never kept. The
        # messages left open before it wait for the channel's next reply.
        return ChatResult(**answered)
    # A reply that joined a forget still records its follow-ups: the extraction waits for
    # the forget's undo (agent.extraction_jobs), as before the reply went with it (review).
    if forgot:
        # The request to forget and its reply never feed memory (retrieval, search,
        # extraction, compaction, the history): they name the topic.
        from memory.services.forgetting import forget_exchange_exclude

        forget_exchange_exclude(message_ids=[*message_ids, reply_message.id])
    exchange_followups_enqueue(
        channel=channel,
        message_ids=extracted,
        reply_id=reply_message.id,
        tool_results=[o.content for o in outcomes if o.feeds_extraction and not o.is_error],
        # Not after a forget: the exchange names what was (or would be) forgotten. The
        # messages it left unanswered stay open: the channel's next reply closes them.
        extract=bool(extracted) and not forgot,
    )
    return ChatResult(**answered, reply_id=reply_message.id)
