"""The messages and summaries of a memory import: matched on their natural key, or as they
look (an export retyped by hand); forgotten or erased ones stay out, with what points at
them (memory.services.portability_import_records holds the rest of the import)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError

from memory.models import Message, Summary
from memory.models.rules import channel_well_formed, french_number
from memory.services.erased_marks import (
    MESSAGE_KEY,
    marks_known,
    message_anyone_mark,
    message_anyone_marks,
    message_mark,
    moment_to_the_second,
    said_alike,
    said_alike_mark,
    said_alike_marks,
    summary_mark,
)
from memory.services.indexing import KIND_MESSAGE, KIND_SUMMARY
from memory.services.messages import (
    BAD_CHANNEL,
    CONTENT_TOO_LONG,
    EMPTY_MESSAGE,
    STORED_MAX_CHARS,
    channel_validate,
)
from memory.services.portability import MESSAGE_FIELDS
from memory.services.portability_legacy import summary_repaired
from memory.services.portability_validate import (
    DUPLICATE_ID,
    MESSAGE_OBSERVED_SPEC,
    SPECS,
    UNKNOWN_REF,
    ImportLineError,
    dates_check,
    model_check,
    record_check,
)

if TYPE_CHECKING:
    from memory.services.portability_import_records import ImportReport

EMPTY_SUMMARY = "le résumé est vide."
REPLY_ELSEWHERE = "champ « reply_to » : le message {id} est d'un autre canal."
FORGOTTEN_ROW = "{kind} du {date} : oublié dans cette mémoire, non réimporté."
ERASED_ROW = "{kind} du {date} : effacé de cette mémoire, non réimporté."
# New rows are written by batches (one INSERT per batch; the FTS triggers fire per row).
BATCH = 500
# The natural key of a message: (channel, role, author, source, created_at, content digest).
assert set(MESSAGE_KEY) == set(MESSAGE_FIELDS) - {"compacted"}


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _message_key(values: dict) -> tuple:
    return (*(values[name] for name in MESSAGE_KEY[:-1]), _digest(values["content"]))


class MessageRecords:
    """The Importer's messages and summaries, with their state; the Importer's report and
    ``new`` (the rows to index) are shared with its facts."""

    report: ImportReport
    new: dict[str, list[int]]

    def __init__(self) -> None:
        self.message_ids: dict[int, int | Message | None] = {}  # file id -> row (id or to insert)
        self.message_channels: dict[int, str] = {}  # file id -> its channel
        self.forgotten: set[int] = set()  # file ids of messages forgotten in this memory
        self.erased: set[int] = set()  # those of them erased for good
        # What this memory holds, read once: the matching keys of its messages, and the
        # same rows as they look (erased_marks.said_alike_mark).
        self._messages: dict[tuple, tuple[int | Message, bool]] | None = None
        self._messages_alike: dict[str, tuple[int, bool]] = {}
        # The forgotten ones as they look whoever they name as author -> their row
        # (erased_marks.message_anyone_mark: as POST /messages matches them).
        self._forgotten_anyone: dict[str, int] = {}
        self._erased: set[str] | None = None  # the erasure marks, read once
        self._message_batch: list[tuple[int, Message, int | None]] = []

    def _existing_messages(self) -> dict[tuple, tuple[int | Message, bool]]:
        if self._messages is None:
            rows = Message.all_objects.values_list(
                *MESSAGE_KEY, "id", "forgetting_id", "memory_excluded"
            )
            self._messages = {}
            for row in rows.iterator(chunk_size=2000):
                held = (row[6], row[7] is not None or row[8])
                self._messages[(*row[:5], _digest(row[5]))] = held
                alike = said_alike_mark("message", dict(zip(MESSAGE_KEY, row[:6], strict=True)))
                if alike not in self._messages_alike or not held[1]:  # a live row first
                    self._messages_alike[alike] = held
                if held[1]:
                    anyone = message_anyone_mark(dict(zip(MESSAGE_KEY, row[:6], strict=True)))
                    self._forgotten_anyone.setdefault(anyone, row[6])
        return self._messages

    def _was_erased(self, *marks: str) -> bool:
        """Whether one of ``marks`` was left by an erasure here (the marks read once)."""
        if self._erased is None:
            self._erased = marks_known()
        return not self._erased.isdisjoint(marks)

    def _message(self, line: int, record: dict) -> None:
        observed = {k: record[k] for k in MESSAGE_OBSERVED_SPEC if k in record}
        record = {k: v for k, v in record.items() if k not in MESSAGE_OBSERVED_SPEC}
        values = record_check(line, record, SPECS["message"])
        if observed:
            # A message of an observed room: a live extract until the digest read it.
            observed = record_check(line, observed, {k: MESSAGE_OBSERVED_SPEC[k] for k in observed})
            values["observed"] = observed.get("observed") or None  # the model's flag: true or null
            values["digested_at"] = observed.get("digested_at")
        file_id, reply_to = values.pop("id"), values.pop("reply_to")
        if file_id in self.message_ids:
            raise ImportLineError(line, DUPLICATE_ID.format(id=file_id))
        if reply_to is not None and reply_to not in self.message_ids:
            raise ImportLineError(line, UNKNOWN_REF.format(name="reply_to", id=reply_to))
        try:
            values["channel"] = channel_validate(values["channel"])
        except ValidationError:
            raise ImportLineError(line, f"champ « channel » : {BAD_CHANNEL}") from None
        if reply_to is not None and self.message_channels[reply_to] != values["channel"]:
            # An exchange is one channel's (its point, its forget, the history it is seen in).
            raise ImportLineError(line, REPLY_ELSEWHERE.format(id=reply_to))
        self.message_channels[file_id] = values["channel"]
        if not values["content"].strip():
            raise ImportLineError(line, f"champ « content » : {EMPTY_MESSAGE}")
        if len(values["content"]) > STORED_MAX_CHARS:
            too_long = CONTENT_TOO_LONG.format(
                limit=french_number(STORED_MAX_CHARS), length=french_number(len(values["content"]))
            )
            raise ImportLineError(line, f"champ « content » : {too_long}")
        dates_check(
            line,
            values,
            past=("created_at", "digested_at"),
            ordered=[("created_at", "digested_at")],
        )
        message = Message(**values)
        model_check(line, message, exclude=["reply_to", "forgetting"])
        if reply_to in self.forgotten:
            # Its exchange is forgotten (or erased) here: the reply stays out too.
            self._left_out(file_id, values, erased=reply_to in self.erased)
            return
        existing = self._existing_messages()
        key = _message_key(values)
        # A row here under this key, or as it looks (its text retyped in the file): that row.
        alike = said_alike_mark("message", values)
        held = existing.get(key) or self._messages_alike.get(alike)
        if held is not None:
            row, forgotten = held
            self.message_ids[file_id] = row
            if forgotten:
                self.forgotten.add(file_id)
            self._kept("message", forgotten, values["created_at"])
            return
        forgotten_row = self._forgotten_anyone.get(message_anyone_mark(values))
        if forgotten_row is not None:
            # The same message naming another author (a gateway's copy of the history):
            # forgotten here whoever said it, as POST /messages has it (review).
            self.message_ids[file_id] = forgotten_row
            self.forgotten.add(file_id)
            self._kept("message", True, values["created_at"])
            return
        marks = [message_mark(values), *said_alike_marks("message", values)]
        if self._was_erased(*marks, *message_anyone_marks(values)):
            self._left_out(file_id, values, erased=True)
            return
        existing[key] = (message, False)
        self.message_ids[file_id] = message
        self._message_batch.append((file_id, message, reply_to))
        if len(self._message_batch) >= BATCH:
            self._flush_messages()

    def _left_out(self, file_id: int, values: dict, *, erased: bool = False) -> None:
        """A message forgotten or erased here: neither it nor what points at it comes in."""
        self.message_ids[file_id] = None
        self.forgotten.add(file_id)
        if erased:
            self.erased.add(file_id)
        self._kept("message", True, values["created_at"], present=False, erased=erased)

    def _row_id(self, file_id: int | None) -> int | None:
        """The row id of a message of the file (the waiting batch is written if it holds it)."""
        if file_id is None or file_id in self.forgotten:
            return None
        target = self.message_ids[file_id]
        if isinstance(target, Message):
            if target.id is None:
                self._flush_messages()
            return target.id
        return target

    def _flush_messages(self) -> None:
        batch, self._message_batch = self._message_batch, []
        if not batch:
            return
        # One INSERT for the batch; replies then get the ids of what they answer.
        Message.all_objects.bulk_create([message for _, message, _ in batch])
        replies = []
        for file_id, message, reply_to in batch:
            self.message_ids[file_id] = message.id
            self.new[KIND_MESSAGE].append(message.id)
            if reply_to is not None:
                message.reply_to_id = self._row_id(reply_to)
                replies.append(message)
        if replies:
            Message.all_objects.bulk_update(replies, ["reply_to"])
        self.report.count(self.report.created, "message", len(batch))

    def _summary(self, line: int, record: dict) -> None:
        values = record_check(line, record, SPECS["summary"])
        if not values["content"].strip():
            raise ImportLineError(line, f"champ « content » : {EMPTY_SUMMARY}")
        dates_check(line, values, past=("created_at", "period_start", "period_end"))
        # Matched under the file's own channel too (this memory may hold it so), written
        # repaired; the repair is reported only for a summary the import writes.
        filed_channel = values["channel"]
        repaired = summary_repaired(values)
        if not channel_well_formed(values["channel"]):
            raise ImportLineError(line, f"champ « channel » : {BAD_CHANNEL}")
        copies = [values]
        if filed_channel != values["channel"]:
            copies.append({**values, "channel": filed_channel})
        # The summary of this channel and second here with this text, however retyped.
        alike = {said_alike("summary", copy) for copy in copies}
        second = moment_to_the_second(values["created_at"])
        same_moment = Summary.all_objects.filter(
            channel__in={copy["channel"] for copy in copies},
            created_at__gte=second,
            created_at__lt=second + timedelta(seconds=1),
        ).values("channel", "created_at", "content", "forgetting_id")
        held = [row["forgetting_id"] for row in same_moment if said_alike("summary", row) in alike]
        if held:
            self._kept("summary", None not in held, values["created_at"])
            return
        marks = [
            m for copy in copies for m in (summary_mark(copy), *said_alike_marks("summary", copy))
        ]
        if self._was_erased(*marks):
            self._kept("summary", True, values["created_at"], present=False, erased=True)
            return
        summary = Summary(**values)
        model_check(line, summary, exclude=["forgetting"])
        self.report.conflicts.extend(repaired)
        summary.save(force_insert=True)
        self.new[KIND_SUMMARY].append(summary.id)
        self.report.count(self.report.created, "summary")

    def _kept(
        self,
        kind: str,
        forgotten: bool,
        date: datetime,
        *,
        present: bool = True,
        erased: bool = False,
    ) -> None:
        """Count a row of the file matched here (``present``), and report one forgotten, or
        ``erased`` for good, that stays out."""
        if forgotten:
            label = {"message": "message", "summary": "résumé"}[kind]
            said = ERASED_ROW if erased else FORGOTTEN_ROW
            self.report.conflicts.append(
                said.format(kind=label, date=date.isoformat(timespec="seconds"))
            )
        if present:
            self.report.count(self.report.unchanged, kind)
