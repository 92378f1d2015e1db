"""What the memory records about its own work: retrievals, jobs, recordings, erasures, digests."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.utils import timezone

from memory.models.choices import DigestState, DigestTrigger, JobKind, JobState


class MemoryRetrieval(models.Model):
    """The log of one auto-retrieval run (table memory_retrievals)."""

    created_at = models.DateTimeField("date", default=timezone.now, db_index=True)
    channel = models.CharField("canal", max_length=64, db_index=True)
    message_preview = models.CharField("aperçu du message", max_length=200)
    # [{"id", "kind", "sources": {source: {"rank", "score"}}, "rrf", "text"}]
    memories = models.JSONField("souvenirs injectés", default=list, blank=True)
    # [{"path", "chars"}]
    notes = models.JSONField(default=list, blank=True)
    tokens_added = models.PositiveIntegerField("jetons ajoutés", default=0)
    # {"t1": ms, "embed": ms, "semantic": ms, "fts": ms, "notes": ms, ...}
    timings_ms = models.JSONField("durées (ms)", default=dict, blank=True)
    total_ms = models.FloatField("durée totale (ms)", default=0.0)
    # {"semantic": "timeout", "notes": "ConnectError: ..."}
    failed_sources = models.JSONField("sources indisponibles", default=dict, blank=True)

    class Meta:
        db_table = "memory_retrievals"
        verbose_name = "relevé d'injection"
        verbose_name_plural = "journal de l'auto-retrieval"
        ordering = ["-created_at", "-id"]
        # A channel's last retrievals (what the LLM still sees) without sorting its whole log.
        indexes = [
            models.Index(fields=["channel", "created_at", "id"], name="retrievals_channel_time")
        ]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.message_preview[:60]}"


class Job(models.Model):
    """A durable background job (fact extraction, compaction, …): the outbox of Celery.

    Written in the transaction of the change that needs it, sent to Celery on
    commit, claimed with a lease, swept when its message was lost (a stop, a
    crash), retried with backoff up to a bound, then ``failed`` with its error.
    ``key`` makes enqueueing idempotent (one extraction per exchange).
    """

    kind = models.CharField("type", max_length=32, choices=JobKind.choices, db_index=True)
    key = models.CharField("clé", max_length=200, unique=True)
    payload = models.JSONField("données", default=dict, blank=True)
    state = models.CharField(
        "état", max_length=8, choices=JobState.choices, default=JobState.QUEUED, db_index=True
    )
    attempts = models.PositiveIntegerField("tentatives", default=0)
    error = models.TextField("erreur", blank=True, default="")
    created_at = models.DateTimeField("créée le", default=timezone.now)
    run_after = models.DateTimeField("à lancer après", null=True, blank=True)
    queued_at = models.DateTimeField("mise en file le", null=True, blank=True)
    lease_token = models.CharField("jeton de bail", max_length=32, blank=True, default="")
    lease_until = models.DateTimeField("bail jusqu'au", null=True, blank=True)
    finished_at = models.DateTimeField("terminée le", null=True, blank=True)

    class Meta:
        db_table = "memory_jobs"
        ordering = ["created_at", "id"]
        verbose_name = "tâche de fond"
        verbose_name_plural = "tâches de fond"

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"


class MessageRecording(models.Model):
    """A recording of messages by an outside agent that carried an idempotency key.

    A retried POST /api/memory/messages with the same key returns these ids and
    stores nothing; a retried POST /api/agent/chat gets its answer back (keys
    "chat:…", agent.chat_replay). The fingerprint tells a retry from another
    request reusing the key. Holds ids and numbers only, never content.
    """

    key = models.CharField("clé", max_length=128, unique=True)
    fingerprint = models.CharField("empreinte", max_length=64)
    message_ids = models.JSONField("messages", default=list)
    # A chat request's answer (agent.chat_replay): its reply's, retrieval's and messages'
    # ids, its usage and stop reason. Empty for the messages API and until answered.
    answer = models.JSONField("réponse", default=dict, blank=True)
    created_at = models.DateTimeField("date", default=timezone.now)

    class Meta:
        db_table = "memory_message_recordings"
        verbose_name = "enregistrement de messages"
        verbose_name_plural = "enregistrements de messages"

    def __str__(self) -> str:
        return self.key


class ErasedMark(models.Model):
    """A one-way digest of a row a purge or an erasure deleted for good (never its text).

    An import of an older export and a late extraction drawn from a message older
    than the erasure are recognised by it and kept out (memory.services.erased_marks).
    """

    digest = models.CharField("empreinte", max_length=32, db_index=True)
    erased_at = models.DateTimeField("effacé le", default=timezone.now)

    class Meta:
        db_table = "memory_erased_marks"
        verbose_name = "empreinte d'effacement"
        verbose_name_plural = "empreintes d'effacement"

    def __str__(self) -> str:
        return self.digest


class Digest(models.Model):
    """One run of the digest of the observed rooms (table memory_digests): what it read and stored."""

    started_at = models.DateTimeField("commencé le", default=timezone.now, db_index=True)
    finished_at = models.DateTimeField("terminé le", null=True, blank=True)
    state = models.CharField(
        "état", max_length=8, choices=DigestState.choices, default=DigestState.RUNNING
    )
    trigger = models.CharField(
        "déclenchement",
        max_length=16,
        choices=DigestTrigger.choices,
        default=DigestTrigger.SCHEDULE,
    )
    messages_digested = models.PositiveIntegerField("messages digérés", default=0)
    facts_stored = models.PositiveIntegerField("faits enregistrés", default=0)
    cost_usd = models.DecimalField(
        "coût (USD)", max_digits=12, decimal_places=6, default=Decimal("0")
    )
    note = models.TextField(blank=True, default="")

    class Meta:
        db_table = "memory_digests"
        ordering = ["-started_at", "-id"]
        verbose_name = "synthèse des salons observés"
        verbose_name_plural = "synthèses des salons observés"

    def __str__(self) -> str:
        return f"digest {self.started_at:%Y-%m-%d %H:%M} ({self.state})"
