"""The conversations: messages of every channel and the summaries compaction writes."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.db import models
from django.db.models import Manager
from django.utils import timezone

from memory.models.base import Indexable, InMemoryManager, forgetting_link
from memory.models.choices import MessageRole, MessageSource

PERIOD_REVERSED = "la fin de la période précède son début."


class MessageManager(InMemoryManager):
    """Messages that feed the memory: not forgotten, not part of a forget exchange."""

    def get_queryset(self):
        return super().get_queryset().filter(memory_excluded=False)


class Message(Indexable):
    """One message of a channel. Its content is mirrored in the FTS5 table messages_fts."""

    channel = models.CharField("canal", max_length=64, db_index=True)
    role = models.CharField("rôle", max_length=16, choices=MessageRole.choices)
    author = models.CharField("auteur", max_length=128, blank=True, default="")
    source = models.CharField(
        max_length=16, choices=MessageSource.choices, default=MessageSource.USER
    )
    # No NUL (the API refuses it with DRF's rule; an import reaches the model's): SQLite's
    # LIKE and the FTS tokenizer stop at it, and pages would show it raw (QA).
    content = models.TextField("contenu", validators=[ProhibitNullCharactersValidator()])
    created_at = models.DateTimeField("date", default=timezone.now, db_index=True)
    compacted = models.BooleanField("compacté", default=False)
    # The user message this assistant reply answers: together they make the
    # "exchange" indexed in the conversations collection.
    reply_to = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replies",
        verbose_name="réponse à",
    )
    # The forget that took this message (restorable until its purge).
    forgetting = forgetting_link(related_name="messages")
    # Part of an exchange that asked to forget: never feeds retrieval, search,
    # extraction or compaction (it names what was forgotten).
    memory_excluded = models.BooleanField("exclu de la mémoire", default=False)
    # A user message of an observed room (ChannelSettings.observed when it was
    # saved): its point is in the `live` collection, not an exchange in
    # `conversations`. Null for every other message (a nullable column: adding it
    # does not make SQLite remake the table and its FTS triggers).
    observed = models.BooleanField("salon observé", null=True, blank=True)
    # When the digest read it: its live point goes (a version bump), T1 keeps it.
    digested_at = models.DateTimeField("digéré le", null=True, blank=True)

    all_objects = Manager()
    objects = MessageManager()

    class Meta:
        db_table = "messages"
        verbose_name = "message"
        verbose_name_plural = "messages"
        base_manager_name = "all_objects"
        default_manager_name = "objects"
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["channel", "created_at"], name="messages_channel_time"),
            # The compaction check counts a channel's uncompacted messages on every
            # reply: only those are in this index, however long the history.
            models.Index(
                fields=["channel", "id"],
                condition=models.Q(compacted=False),
                name="messages_uncompacted",
            ),
            # The live messages waiting for the digest, whatever the size of T1.
            models.Index(
                fields=["id"],
                condition=models.Q(observed=True, digested_at__isnull=True),
                name="messages_live",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.role}: {self.content[:60]}"


class Summary(Indexable):
    """The compaction of a channel's old messages."""

    channel = models.CharField("canal", max_length=64, db_index=True)
    content = models.TextField("contenu", validators=[ProhibitNullCharactersValidator()])
    message_count = models.PositiveIntegerField("nombre de messages", default=0)
    period_start = models.DateTimeField("début de la période", null=True, blank=True)
    period_end = models.DateTimeField("fin de la période", null=True, blank=True)
    created_at = models.DateTimeField("créé le", default=timezone.now, db_index=True)
    forgetting = forgetting_link(related_name="summaries")

    all_objects = Manager()
    objects = InMemoryManager()

    class Meta:
        base_manager_name = "all_objects"
        default_manager_name = "objects"
        verbose_name = "résumé"
        verbose_name_plural = "résumés"
        ordering = ["-created_at", "-id"]
        indexes = [
            # T1 reads a channel's last summaries on every message (channel_summaries).
            models.Index(fields=["channel", "created_at", "id"], name="summaries_channel_time")
        ]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.content[:60]}"

    def clean(self) -> None:
        # A period ending before it starts would date the summary (``date``) before the
        # exchanges it covers, outside every period filter holding them (an import, QA).
        if self.period_start and self.period_end and self.period_end < self.period_start:
            raise ValidationError({"period_end": PERIOD_REVERSED})

    # The one date of a summary: the end of the period it covers (else its creation).
    @property
    def date(self):
        return self.period_end or self.created_at

    @staticmethod
    def date_expression():
        """``date`` inside a query (annotate, filter, order by)."""
        from django.db.models.functions import Coalesce

        return Coalesce("period_end", "created_at")
