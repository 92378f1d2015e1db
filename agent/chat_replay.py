"""A chat request sent again with its idempotency key is answered once (POST /api/agent/chat
and /chat/stream): a client retrying after a lost answer stores nothing twice and pays the
LLM nothing twice.

The first request with a key records, in the transaction that saves its message, the key,
the request's fingerprint and the message's id (memory.models.MessageRecording: ids and
numbers only, never words); its answer adds the reply's id, the retrieval's id and the
usage. The same key again:

- answered: the same answer comes back (``replayed``), its reply read from T1 now: a reply
  or a message the owner forgot or erased since, or a request to forget and its reply
  (they name the topic), is given back to no retry (ChatAnswerGone), and the injected
  memories are the retrieval log's, which forgets redact;
- still being answered in this process: ChatStillAnswering, nothing stored or paid;
- never answered (an LLM outage, a stop mid-answer): the saved message is answered now,
  not saved again; if a later reply of the channel closed it meanwhile, that reply is the
  answer (nothing paid twice);
- with another request: IdempotencyKeyReused (the key's one rule: messages_record).

"Still being answered" is known per process, as coalescing is (agent.coalescing): with
several web processes, a retry reaching another process while the first answers is told
to wait only if the first has not saved its message yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import IntegrityError, transaction

from agent.chat_result import ChatResult, UsageTotals
from agent.exceptions import ChatAnswerGone, ChatStillAnswering
from memory.models import MemoryRetrieval, Message, MessageRecording, MessageRole
from memory.services.messages_record import KEY_REUSED, IdempotencyKeyReused

STILL_ANSWERING = (
    "Cet envoi (même clé d'idempotence) est encore en cours de traitement : "
    "réessayez dans quelques secondes."
)
ANSWER_FORGOTTEN = "La réponse à cet envoi a été oubliée depuis : elle n'est pas renvoyée."
MESSAGE_FORGOTTEN = "Le message de cet envoi a été oublié depuis : l'agent n'y répond pas."

_answering: set[str] = set()
_answering_lock = threading.Lock()


def chat_key(scoped_key: str) -> str:
    """The key as the chat stores it: apart from the messages API's (an account's scoped
    key: memory.api.messages.idempotency_key_scoped), "" without one."""
    return f"chat:{scoped_key}" if scoped_key else ""


def chat_fingerprint(*, channel: str, text: str, source: str, author: str) -> str:
    data = {"channel": channel, "text": text, "source": str(source), "author": author}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def chat_answering(key: str) -> Iterator[None]:
    """Hold ``key`` while its request is answered; ChatStillAnswering if it is held."""
    if not key:
        yield
        return
    with _answering_lock:
        if key in _answering:
            raise ChatStillAnswering(STILL_ANSWERING)
        _answering.add(key)
    try:
        yield
    finally:
        with _answering_lock:
            _answering.discard(key)


@dataclass
class ChatClaim:
    """What a keyed request does: answer ``message`` (saved by an earlier try), give back
    ``replay``, or (both None) save its message and answer it."""

    message: Message | None = None
    replay: ChatResult | None = None


def chat_claim(key: str, fingerprint: str) -> ChatClaim:
    """What the request with ``key`` must do (see the module docstring)."""
    if not key:
        return ChatClaim()
    recording = MessageRecording.objects.filter(key=key).first()
    if recording is None:
        return ChatClaim()
    if recording.fingerprint != fingerprint:
        raise IdempotencyKeyReused(KEY_REUSED)
    message = _live(recording.message_ids[0]) if recording.message_ids else None
    if message is None:
        raise ChatAnswerGone(MESSAGE_FORGOTTEN)
    answer = recording.answer or {}
    if answer:
        return ChatClaim(replay=_replay(answer, message))
    later = (
        Message.all_objects.filter(
            channel=message.channel, role=MessageRole.ASSISTANT, id__gt=message.id
        )
        .exclude(observed=True)
        .order_by("id")
        .first()
    )
    if later is not None:
        # Closed by a later reply of the channel (or answered, then stopped before the
        # answer was recorded): that reply is the answer.
        answer = {"reply_id": later.id, "message_ids": [message.id]}
        return ChatClaim(replay=_replay(answer, message))
    return ChatClaim(message=message)


def chat_message_save(*, key: str, fingerprint: str, **fields) -> Message:
    """Save the request's message (agent.loop's message_save) and, with a key, its
    recording, in one transaction; ChatStillAnswering when another process recorded the
    same key meanwhile (its message stands, this one is not saved)."""
    from memory.services.messages import message_save

    if not key:
        return message_save(**fields)
    try:
        with transaction.atomic():
            message = message_save(**fields)
            MessageRecording.objects.create(
                key=key, fingerprint=fingerprint, message_ids=[message.id]
            )
    except IntegrityError:
        if MessageRecording.objects.filter(key=key).exists():
            raise ChatStillAnswering(STILL_ANSWERING) from None
        raise
    return message


def chat_answer_record(key: str, result: ChatResult) -> None:
    """Keep what a retry of ``key`` gives back: ids and numbers, never words."""
    if not key:
        return
    answer = {
        "reply_id": result.reply_id,
        "retrieval_id": result.retrieval_id,
        "message_ids": list(result.message_ids),
        "usage": result.usage.as_dict(),
        "stop_reason": result.stop_reason,
    }
    MessageRecording.objects.filter(key=key).update(answer=answer)


@dataclass
class ReplayedRetrieval:
    """What the retrieval of a replayed answer injected, as its log row holds it now."""

    retrieval_id: int | None
    tokens_added: int = 0
    memories: list[dict] = field(default_factory=list)


def _live(message_id: int | None) -> Message | None:
    """The message if it is still there, neither forgotten nor kept out of memory: a
    request to forget and its reply name the topic, and the forget may be erased since
    (QA 9a: the retry gave the erased topic back word for word)."""
    if message_id is None:
        return None
    return Message.objects.filter(pk=message_id).first()


def _replay(answer: dict, message: Message) -> ChatResult:
    from agent.loop import OBSERVED_STOP_REASON  # an answer given without a reply

    stop_reason = answer.get("stop_reason", "")
    reply = _live(answer.get("reply_id"))
    if reply is None and stop_reason != OBSERVED_STOP_REASON:
        raise ChatAnswerGone(ANSWER_FORGOTTEN)
    if reply is not None and any(_live(pk) is None for pk in answer.get("message_ids", [])):
        raise ChatAnswerGone(MESSAGE_FORGOTTEN)  # a message it answered was forgotten since
    return ChatResult(
        reply=reply.content if reply is not None else "",
        retrieval_id=answer.get("retrieval_id"),
        usage=_usage(answer.get("usage") or {}),
        channel=message.channel,
        message_ids=list(answer.get("message_ids") or [message.id]),
        reply_id=reply.id if reply is not None else None,
        retrieval=_retrieval(answer.get("retrieval_id")),
        stop_reason=stop_reason,
        replayed=True,
    )


def _usage(data: dict) -> UsageTotals:
    return UsageTotals(
        calls=int(data.get("calls", 0)),
        input_tokens=int(data.get("input_tokens", 0)),
        output_tokens=int(data.get("output_tokens", 0)),
        retrieval_tokens=int(data.get("retrieval_tokens", 0)),
        cost_usd=Decimal(str(data.get("cost_usd", "0"))),
        model=str(data.get("model", "")),
    )


def _retrieval(retrieval_id: int | None) -> ReplayedRetrieval | None:
    """The log row's memories (redacted by every forget since), None once purged."""
    if retrieval_id is None:
        return None
    row = MemoryRetrieval.objects.filter(pk=retrieval_id).first()
    if row is None:
        return None
    memories = [{"id": m["id"], "kind": m["kind"], "text": m.get("text", "")} for m in row.memories]
    return ReplayedRetrieval(retrieval_id=row.id, tokens_added=row.tokens_added, memories=memories)
