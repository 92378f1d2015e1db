"""The outside agents' recording of messages (POST /api/memory/messages and /context with
``record``): a batch saved all-or-nothing, an idempotency key so a retry stores nothing
twice, a reply put with its question's exchange (forgotten or erased: REPLY_WINDOW), a
message the owner forgot or erased refused when sent again with its date, and, when a
reply closes an exchange, the same follow-up jobs our own agent loop records
(agent.followups). Each message is saved by memory.services.messages.message_save.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from memory.exceptions import MemoryServiceError
from memory.models import Message, MessageRecording, MessageRole, MessageSource
from memory.selectors import channel_conversation
from memory.services.messages import QuestionErased, channel_validate, message_save

# The source a role implies (an assistant reply is stored as our loop stores it).
SOURCE_BY_ROLE = {
    MessageRole.USER: MessageSource.USER,
    MessageRole.ASSISTANT: MessageSource.USER,
    MessageRole.SYSTEM: MessageSource.SYSTEM,
    MessageRole.TOOL: MessageSource.TOOL,
}
ROLE_BY_SOURCE = {
    MessageSource.USER: MessageRole.USER,
    MessageSource.SYSTEM: MessageRole.SYSTEM,
    MessageSource.TOOL: MessageRole.TOOL,
}
# An exchange never gathers more than this many messages before its reply.
EXCHANGE_MAX_MESSAGES = 50
# Keys older than this are purged (memory.services.retention): a retry after it stores again.
IDEMPOTENCY_KEY_RETENTION = timedelta(days=30)
# A clock a little ahead of ours is not an error; a date in the future is.
FUTURE_TOLERANCE = timedelta(minutes=5)
ROLE_SOURCE_MISMATCH = "Le rôle « {role} » ne va pas avec la source « {source} »."
FUTURE_TIMESTAMP = "La date du message est dans le futur."
REPLY_BEFORE_QUESTION = "La réponse est datée avant la question à laquelle elle répond."
ITEM_INVALID = "Le message d'index {index} est invalide ({detail}) : rien n'a été enregistré."
KEY_REUSED = (
    "Cette clé d'idempotence a déjà servi pour d'autres messages : "
    "choisissez une nouvelle clé pour un nouvel envoi."
)


class MessageItemInvalid(MemoryServiceError):
    """One message of a batch is refused: the whole batch is (nothing stored)."""

    def __init__(self, index: int, detail: str) -> None:
        super().__init__(ITEM_INVALID.format(index=index, detail=detail))
        self.index = index


class IdempotencyKeyReused(MemoryServiceError):
    """The key of an earlier recording came with different messages."""


@dataclass(frozen=True)
class MessageDraft:
    """One message an outside agent records (validated by the API serializer)."""

    channel: str
    content: str
    role: str = MessageRole.USER
    source: str = MessageSource.USER
    author: str = ""
    created_at: datetime | None = None
    # The request to forget and its reply: recorded, but they never feed memory.
    memory_excluded: bool = False


@dataclass
class Recording:
    message_ids: list[int] = field(default_factory=list)
    # True when the idempotency key was seen: the earlier ids, nothing stored.
    replayed: bool = False


def message_role_source(*, role: str | None, source: str | None) -> tuple[str, str]:
    """The (role, source) of a message when one or both are given; ValidationError if they clash."""
    if role is None and source is None:
        return MessageRole.USER, MessageSource.USER
    if role is None:
        return ROLE_BY_SOURCE[MessageSource(source)], MessageSource(source)
    expected = SOURCE_BY_ROLE[MessageRole(role)]
    if source is not None and MessageSource(source) != expected:
        raise ValidationError({"source": ROLE_SOURCE_MISMATCH.format(role=role, source=source)})
    return MessageRole(role), expected


def message_timestamp_validate(value: datetime | None) -> datetime | None:
    if value is not None and value > timezone.now() + FUTURE_TOLERANCE:
        raise ValidationError({"timestamp": FUTURE_TIMESTAMP})
    return value


def _fingerprint(drafts: Sequence[MessageDraft]) -> str:
    data = [asdict(d) | {"created_at": d.created_at and d.created_at.isoformat()} for d in drafts]
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _replay(key: str, fingerprint: str) -> Recording | None:
    recording = MessageRecording.objects.filter(key=key).first()
    if recording is None:
        return None
    if recording.fingerprint != fingerprint:
        raise IdempotencyKeyReused(KEY_REUSED)
    return Recording(message_ids=list(recording.message_ids), replayed=True)


def _open_exchange(channel: str) -> list[Message]:
    """The channel's messages since its last reply: what the next reply answers. Those of
    its conversation only (selectors.channel_conversation): what an observed room said
    before it stopped being observed is the digest's, never the owner's exchange."""
    conversation = channel_conversation(channel=channel)
    last_reply = (
        conversation.filter(role=MessageRole.ASSISTANT)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    rows = conversation.filter(id__gt=last_reply or 0)
    return list(rows.order_by("-id")[:EXCHANGE_MAX_MESSAGES])[::-1]


def _record_one(draft: MessageDraft) -> Message:
    from agent.followups import exchange_followups_enqueue
    from memory.services.forgetting import forget_exchange_exclude

    role, source = message_role_source(role=draft.role, source=draft.source)
    message_timestamp_validate(draft.created_at)
    fields = {
        "channel": channel_validate(draft.channel),
        "role": role,
        "content": draft.content,
        "author": draft.author,
        "source": source,
        "created_at": draft.created_at,
    }
    if draft.created_at is not None:
        _not_forgotten_here(fields)
    from memory.services.channels import channel_is_observed

    if role != MessageRole.ASSISTANT or channel_is_observed(fields["channel"]):
        # In an observed room nobody answers the owner: every message stands alone
        # (live), and the digest, not an exchange's extraction, reads it.
        message = message_save(**fields)
        if draft.memory_excluded:
            forget_exchange_exclude(message_ids=[message.id])
        return message
    # A reply closes the exchange, as in the agent loop: it answers the user
    # messages since the last reply (coalesced), keyed on the last one, and the
    # exchange's extraction reads them, the reply and the tool results.
    exchange = _open_exchange(fields["channel"])
    users = [m for m in exchange if m.role == MessageRole.USER]
    # A gateway's clock may run ahead (FUTURE_TOLERANCE): never later than ours (review).
    moment = min(draft.created_at or timezone.now(), timezone.now())
    question = _reply_question(fields["channel"], moment) or (users[-1] if users else None)
    asked = question.created_at if question else None
    if asked and draft.created_at and draft.created_at < asked - FUTURE_TOLERANCE:
        # No history holds an answer written before its question (QA: the API took it).
        raise ValidationError({"created_at": REPLY_BEFORE_QUESTION})
    reply = message_save(**fields, reply_to_id=question.id if question else None)
    if draft.memory_excluded:
        # As after the agent's memory__forget: the whole exchange names the topic.
        forget_exchange_exclude(message_ids=[*(m.id for m in exchange), reply.id])
    elif reply.forgetting_id is not None or reply.memory_excluded:
        # It went with its question (message_save), and so do the tool results recorded
        # for it (review: they stayed live, naming the topic). The messages left open
        # before that question wait for the channel's next reply; the extraction of its
        # exchange waits for the forget's undo (agent.extraction_jobs).
        exchange = [m for m in exchange if m.role == MessageRole.TOOL and m.id > question.id]
        Message.all_objects.filter(pk__in=[m.id for m in exchange]).update(
            forgetting_id=reply.forgetting_id, memory_excluded=reply.memory_excluded
        )
        parts = Message.all_objects.filter(reply_to_id=question.id, role=MessageRole.ASSISTANT)
        if parts.exclude(pk=reply.pk).exists():
            return reply  # a later part: the first part recorded the follow-ups (review)
        users = [question]
    exchange_followups_enqueue(
        channel=reply.channel,
        message_ids=[m.id for m in users],
        reply_id=reply.id,
        tool_results=[m.content for m in exchange if m.role == MessageRole.TOOL],
        extract=bool(users) and not draft.memory_excluded,
    )
    return reply


# An assistant message recorded this long after the question it would answer is not its
# reply: a reminder, a message of the agent's own (review: one days after a forgotten
# question went with its forget; one after an erased question was refused).
REPLY_WINDOW = timedelta(minutes=10)


def _reply_question(channel: str, moment: datetime) -> Message | None:
    """The message an assistant message recorded at ``moment`` answers when the owner forgot
    or erased it, None when it answers a live one (the open exchange's last) or nothing.

    The channel's last user message if no reply came after it, whatever its state
    (forgotten, or part of a request to forget); or, when the last message is a reply that
    went with such a question, that question (an answer sent in several messages, or sent
    again: review). Only a question asked at most REPLY_WINDOW before ``moment``: later,
    the message answers nothing (measured from the question, never from an earlier part).
    QuestionErased when the owner erased such a question that nobody had answered
    (erased_marks.open_question_mark, dated by the question)."""
    from memory.services.erased_marks import erased_since, open_question_mark

    # The owner's conversation, forgotten messages included: never what an observed room
    # said (other people's words, the digest's: selectors.channel_conversation).
    spoken = Message.all_objects.filter(
        channel=channel, role__in=(MessageRole.USER, MessageRole.ASSISTANT)
    ).exclude(observed=True)
    last = spoken.order_by("-id").first()
    mark = open_question_mark(channel, last.id if last else 0)
    if erased_since([mark], moment - REPLY_WINDOW):
        raise QuestionErased()
    if last is None or (last.forgetting_id is None and not last.memory_excluded):
        return None
    question = last
    if last.role == MessageRole.ASSISTANT:
        question = Message.all_objects.filter(pk=last.reply_to_id).first()
    if question is None or moment - question.created_at > REPLY_WINDOW:
        return None
    return question


def messages_record(*, drafts: Sequence[MessageDraft], idempotency_key: str = "") -> Recording:
    """Save an outside agent's messages in order, all or none; the ids, in order.

    Each message is saved as our agent loop saves it (message_save: its
    exchange is indexed once committed); an assistant message closes its
    exchange and records the same follow-up jobs (agent.followups). With an
    ``idempotency_key`` seen before, the earlier ids come back and nothing is
    stored (IdempotencyKeyReused when the messages differ).
    """
    fingerprint = _fingerprint(drafts)
    if idempotency_key and (done := _replay(idempotency_key, fingerprint)):
        return done
    try:
        with transaction.atomic():
            recording = None
            if idempotency_key:
                # First, so a concurrent retry with the same key fails here, whole.
                recording = MessageRecording.objects.create(
                    key=idempotency_key, fingerprint=fingerprint
                )
            ids = []
            for index, draft in enumerate(drafts):
                try:
                    ids.append(_record_one(draft).id)
                except ValidationError as exc:
                    raise MessageItemInvalid(index, _detail(exc)) from exc
                except QuestionErased as exc:
                    raise MessageItemInvalid(index, str(exc)) from exc
            if recording is not None:
                recording.message_ids = ids
                recording.save(update_fields=["message_ids"])
    except IntegrityError:
        if idempotency_key and (done := _replay(idempotency_key, fingerprint)):
            return done
        raise
    return Recording(message_ids=ids)


def item_errors_text(errors: Mapping[str, Iterable]) -> str:
    """A message's field errors as one French line: "content : Le message est vide.";
    an error of the whole message is said without the internal key it is filed under
    (« non_field_errors », « __all__ »: QA)."""
    return "; ".join(
        " ".join(map(str, msgs))
        if name in _WHOLE_ITEM_KEYS
        else f"{name} : {' '.join(map(str, msgs))}"
        for name, msgs in errors.items()
    )


_WHOLE_ITEM_KEYS = frozenset({"non_field_errors", "__all__"})


FORGOTTEN_MESSAGE = (
    "Ce message a été oublié dans cette mémoire (à sa date d'origine) : il n'est pas réenregistré."
)
ERASED_MESSAGE = (
    "Ce message a été effacé de cette mémoire (à sa date d'origine) : il n'est pas réenregistré."
)


def _not_forgotten_here(fields: dict) -> None:
    """A message sent with its original date (an import) that the owner forgot or erased
    here is refused, as memory_import leaves it out (QA: it came back through the API):
    matched as it looks (erased_marks.said_alike: its second, its text folded) whoever it
    names as its author (erased_marks.message_alike_anyone: QA, a gateway re-sending its
    history with the sender's name brought it back), a message excluded from memory
    counting as forgotten. The same words said now are news."""
    from memory.services.erased_marks import (
        MESSAGE_KEY,
        erased_since,
        message_alike_anyone,
        message_anyone_marks,
        message_mark,
        moment_to_the_second,
        said_alike_marks,
    )

    second = moment_to_the_second(fields["created_at"])
    held = (
        Message.all_objects.filter(
            **{name: fields[name] for name in ("channel", "role", "source")},
            created_at__gte=second,
            created_at__lt=second + timedelta(seconds=1),
        )
        .filter(Q(forgetting__isnull=False) | Q(memory_excluded=True))
        .values(*MESSAGE_KEY)
    )
    alike = message_alike_anyone(fields)
    if any(message_alike_anyone(row) == alike for row in held):
        raise ValidationError(FORGOTTEN_MESSAGE)
    marks = [message_mark(fields), *said_alike_marks("message", fields)]
    if erased_since([*marks, *message_anyone_marks(fields)], None):
        raise ValidationError(ERASED_MESSAGE)


def _detail(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return item_errors_text(exc.message_dict)
    return " ".join(exc.messages)
