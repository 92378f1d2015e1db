"""T1, the memory's source of truth: facts, messages, summaries, settings, logs."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone


class MemoryType(models.TextChoices):
    IDENTITY = "identity", "Identité"
    GOAL = "goal", "Objectif"
    DECISION = "decision", "Décision"
    TODO = "todo", "À faire"
    PREFERENCE = "preference", "Préférence"
    FACT = "fact", "Fait"
    EVENT = "event", "Événement"
    OBSERVATION = "observation", "Observation"


# The importance a fact gets when nobody says otherwise (the spacebot seed's scale).
DEFAULT_IMPORTANCE: dict[str, float] = {
    MemoryType.IDENTITY: 1.0,
    MemoryType.GOAL: 0.9,
    MemoryType.DECISION: 0.8,
    MemoryType.TODO: 0.8,
    MemoryType.PREFERENCE: 0.7,
    MemoryType.FACT: 0.6,
    MemoryType.EVENT: 0.4,
    MemoryType.OBSERVATION: 0.3,
}


class FactSource(models.TextChoices):
    CONVERSATION = "conversation", "Conversation"
    NOTE = "note", "Note"
    TOOL = "tool", "Outil"
    MANUAL = "manual", "Manuel"


class Actor(models.TextChoices):
    AGENT = "agent", "Agent"
    USER = "user", "Utilisateur"
    ADMIN = "admin", "Administration"
    SYSTEM = "system", "Système"


class RevisionReason(models.TextChoices):
    CREATED = "created", "Créé"
    EXTRACTED = "extracted", "Extrait d'une conversation"
    EDITED = "edited", "Modifié"
    MERGED = "merged", "Fusionné par similarité"
    SUPERSEDED = "superseded", "Remplacé"
    FORGOTTEN = "forgotten", "Oublié"
    RESTORED = "restored", "Restauré"
    EXPIRED = "expired", "Expiré"


class IndexState(models.TextChoices):
    PENDING = "pending", "En attente"
    INDEXED = "indexed", "Indexé"
    FAILED = "failed", "Échec"
    # Rows that never get a point (system and tool messages).
    SKIPPED = "skipped", "Non indexé"


class Indexable(models.Model):
    """A row that has a point in Qdrant (T2), derived from it and rebuildable."""

    index_state = models.CharField(
        max_length=8, choices=IndexState.choices, default=IndexState.PENDING, db_index=True
    )
    index_attempts = models.PositiveIntegerField(default=0)
    index_error = models.TextField(blank=True, default="")
    indexed_at = models.DateTimeField(null=True, blank=True)
    # When a failed row may be tried again (exponential backoff); null: now.
    index_retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class MessageRole(models.TextChoices):
    USER = "user", "Utilisateur"
    ASSISTANT = "assistant", "Assistant"
    SYSTEM = "system", "Système"
    TOOL = "tool", "Outil"


class MessageSource(models.TextChoices):
    USER = "user", "Utilisateur"
    SYSTEM = "system", "Système"
    TOOL = "tool", "Outil"


class Message(Indexable):
    """One message of a channel. Its content is mirrored in the FTS5 table messages_fts."""

    channel = models.CharField(max_length=64, db_index=True)
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    author = models.CharField(max_length=128, blank=True, default="")
    source = models.CharField(
        max_length=16, choices=MessageSource.choices, default=MessageSource.USER
    )
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    compacted = models.BooleanField(default=False)
    # The user message this assistant reply answers: together they make the
    # "exchange" indexed in the conversations collection.
    reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies"
    )

    class Meta:
        db_table = "messages"
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["channel", "created_at"], name="messages_channel_time")]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.role}: {self.content[:60]}"


class Summary(Indexable):
    """The compaction of a channel's old messages."""

    channel = models.CharField(max_length=64, db_index=True)
    content = models.TextField()
    message_count = models.PositiveIntegerField(default=0)
    period_start = models.DateTimeField(null=True, blank=True)
    period_end = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name_plural = "summaries"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.content[:60]}"


def _validate_subjects(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValidationError("Les sujets doivent être une liste de mots.")


class Fact(Indexable):
    """A durable fact about the owner or the people around them (table core_memory)."""

    key = models.CharField(max_length=200, unique=True)
    value = models.TextField()
    memory_type = models.CharField(
        max_length=16, choices=MemoryType.choices, default=MemoryType.FACT, db_index=True
    )
    importance = models.FloatField(
        default=DEFAULT_IMPORTANCE[MemoryType.FACT],
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        db_index=True,  # the retrieval's T1 source reads the important facts on every message
    )
    subjects = models.JSONField(default=list, blank=True, validators=[_validate_subjects])
    source = models.CharField(
        max_length=16, choices=FactSource.choices, default=FactSource.MANUAL, db_index=True
    )
    channel = models.CharField(max_length=64, blank=True, default="", db_index=True)
    source_message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="facts"
    )
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    access_count = models.PositiveIntegerField(default=0)
    forgotten = models.BooleanField(default=False, db_index=True)
    forgotten_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "core_memory"
        ordering = ["-importance", "key"]

    def __str__(self) -> str:
        return f"{self.key} = {self.value[:60]}"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class FactRevision(models.Model):
    """One change of a fact: who made it, why, and the value before and after."""

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="revisions")
    actor = models.CharField(max_length=16, choices=Actor.choices)
    reason = models.CharField(max_length=16, choices=RevisionReason.choices)
    old_value = models.TextField(blank=True, default="")
    new_value = models.TextField(blank=True, default="")
    # Other fields that changed, as {"field": [old, new]}.
    changes = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.fact_id} {self.reason} by {self.actor}"


class MemorySettings(models.Model):
    """The single row of tunable knobs (table memory_settings).

    Ranges are the UI's: the model validates them, so the admin, the API and
    the /memory page all refuse the same values.
    """

    SINGLETON_ID = 1

    auto_retrieve_enabled = models.BooleanField("auto-retrieval activé", default=True)
    max_results = models.PositiveSmallIntegerField(
        "nombre maximum de souvenirs",
        default=4,
        validators=[MinValueValidator(1), MaxValueValidator(10)],
    )
    min_score = models.FloatField(
        "score minimum", default=0.5, validators=[MinValueValidator(0.3), MaxValueValidator(0.8)]
    )
    obsidian_context_enabled = models.BooleanField("notes Obsidian en contexte", default=True)
    obsidian_context_notes = models.JSONField(
        "notes de contexte fixes", default=list, blank=True, validators=[_validate_subjects]
    )
    obsidian_context_tag = models.CharField("tag de contexte", max_length=100, default="makilab")
    recent_window_hours = models.PositiveSmallIntegerField(
        "fenêtre récente (heures)",
        default=6,
        validators=[MinValueValidator(1), MaxValueValidator(168)],
    )
    dedup_threshold = models.FloatField(
        "seuil de quasi-doublon",
        default=0.85,
        validators=[MinValueValidator(0.5), MaxValueValidator(1.0)],
    )
    search_min_score = models.FloatField(
        "score minimum des recherches",
        default=0.3,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    forget_min_score = models.FloatField(
        "score minimum de l'oubli",
        default=0.5,
        validators=[MinValueValidator(0.3), MaxValueValidator(1.0)],
    )
    history_length = models.PositiveSmallIntegerField(
        "longueur de l'historique",
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(200)],
    )
    reinjection_turns = models.PositiveSmallIntegerField(
        "tours sans réinjection",
        default=3,
        validators=[MinValueValidator(0), MaxValueValidator(50)],
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "memory_settings"
        verbose_name = "réglages de la mémoire"
        verbose_name_plural = "réglages de la mémoire"
        constraints = [
            models.CheckConstraint(condition=models.Q(id=1), name="memory_settings_single_row"),
        ]

    def __str__(self) -> str:
        return "Réglages de la mémoire"

    def save(self, *args, **kwargs) -> None:
        self.pk = self.SINGLETON_ID
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("Les réglages de la mémoire ne peuvent pas être supprimés.")

    @classmethod
    def load(cls) -> MemorySettings:
        obj, _ = cls.objects.get_or_create(pk=cls.SINGLETON_ID)
        return obj


class MemoryRetrieval(models.Model):
    """The log of one auto-retrieval run (table memory_retrievals)."""

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    channel = models.CharField(max_length=64, db_index=True)
    message_preview = models.CharField(max_length=200)
    # [{"id", "kind", "sources": {source: {"rank", "score"}}, "rrf", "text"}]
    memories = models.JSONField(default=list, blank=True)
    # [{"path", "chars"}]
    notes = models.JSONField(default=list, blank=True)
    tokens_added = models.PositiveIntegerField(default=0)
    # {"t1": ms, "embed": ms, "semantic": ms, "fts": ms, "notes": ms, ...}
    timings_ms = models.JSONField(default=dict, blank=True)
    total_ms = models.FloatField(default=0.0)
    # {"semantic": "timeout", "notes": "ConnectError: ..."}
    failed_sources = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "memory_retrievals"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.message_preview[:60]}"
