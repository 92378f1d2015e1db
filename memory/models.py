"""T1, the memory's source of truth: facts, messages, summaries, settings, logs."""

from __future__ import annotations

import re
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import (
    MaxValueValidator,
    MinValueValidator,
    ProhibitNullCharactersValidator,
)
from django.db import models
from django.db.models import Manager
from django.utils import timezone

from memory.stores.compiled import CompiledRead


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


class FactKind(models.TextChoices):
    """Whose memory a Fact row is: the owner's world, or the agent's own self and goals."""

    OWNER = "owner", "Propriétaire"
    SELF = "self", "Moi (l'agent)"
    GOAL = "goal", "Objectif de l'agent"


class SelfCategory(models.TextChoices):
    CONTEXT = "context", "Contexte"
    CAPABILITY = "capability", "Capacité"
    LIMITATION = "limitation", "Limite"
    PREFERENCE = "preference", "Préférence"
    RELATION = "relation", "Relation"


class GoalCategory(models.TextChoices):
    CAPABILITY_REQUEST = "capability_request", "Capacité souhaitée"
    UNDERSTANDING = "understanding", "Comprendre"
    CONNECTION = "connection", "Lien"


# The categories each kind accepts (an owner fact has none).
KIND_CATEGORIES: dict[str, tuple[str, ...]] = {
    FactKind.OWNER: ("",),
    FactKind.SELF: tuple(SelfCategory.values),
    FactKind.GOAL: tuple(GoalCategory.values),
}
CATEGORY_LABELS: dict[str, str] = {
    **dict(SelfCategory.choices),
    **dict(GoalCategory.choices),
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
    """A row that has a point in Qdrant (T2), derived from it and rebuildable.

    The indexing state machine (memory.services.indexing): every change the
    point must reflect bumps ``version`` and sets the row pending; a task claims
    the row with a lease, embeds it, writes the point carrying that version, and
    marks the row indexed only if the version and its lease are still current.
    ``indexed_version`` is the version the point (or its absence) reflects.
    """

    index_state = models.CharField(
        "état d'indexation",
        max_length=8,
        choices=IndexState.choices,
        default=IndexState.PENDING,
        db_index=True,
    )
    index_attempts = models.PositiveIntegerField("tentatives d'indexation", default=0)
    index_error = models.TextField("erreur d'indexation", blank=True, default="")
    indexed_at = models.DateTimeField("indexé le", null=True, blank=True)
    # When a failed row may be tried again (exponential backoff); null: now.
    index_retry_at = models.DateTimeField("nouvel essai le", null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    indexed_version = models.PositiveIntegerField("version indexée", default=0)
    # When a task was last sent for the row: the sweep leaves queued work alone.
    index_queued_at = models.DateTimeField("mis en file le", null=True, blank=True)
    # The claim of the task working on the row (lease token + end of lease).
    index_lease_token = models.CharField("jeton de bail", max_length=32, blank=True, default="")
    index_lease_until = models.DateTimeField("bail jusqu'au", null=True, blank=True)

    class Meta:
        abstract = True


class ForgettingState(models.TextChoices):
    ACTIVE = "active", "Oublié (annulable)"
    RESTORED = "restored", "Restauré"
    PURGED = "purged", "Effacé définitivement"


class ForgetSelection(models.TextChoices):
    WORDS = "words", "Tous les mots du sujet"
    LLM = "llm", "Jugement du LLM"
    ERASE = "erase", "Effacement direct"


class Forgetting(models.Model):
    """One forget of a topic: what it took stays restorable until ``purge_after``.

    Forgotten rows point here; they are out of every read path (default
    managers, FTS views, Qdrant) until restored, and deleted for good by the
    purge. After the purge the topic itself is redacted.
    """

    topic = models.CharField("sujet", max_length=500)
    actor = models.CharField("par", max_length=16, choices=Actor.choices, default=Actor.AGENT)
    # How the items were chosen: every meaningful word, the LLM's judgement, or the
    # owner's hard delete of a fact (memory.services.erasing).
    selection = models.CharField(
        "sélection", max_length=16, choices=ForgetSelection.choices, default=ForgetSelection.WORDS
    )
    state = models.CharField(
        "état", max_length=16, choices=ForgettingState.choices, default=ForgettingState.ACTIVE
    )
    # {"exchanges": n, "messages": n, "facts": n, "summaries": n, "points": n}
    counts = models.JSONField("quantités", default=dict, blank=True)
    created_at = models.DateTimeField("créé le", default=timezone.now, db_index=True)
    purge_after = models.DateTimeField("définitif le", db_index=True)
    restored_at = models.DateTimeField("restauré le", null=True, blank=True)
    purged_at = models.DateTimeField("effacé le", null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "oubli"
        verbose_name_plural = "oublis"

    def __str__(self) -> str:
        return f"{self.topic[:60]} ({self.state})"


def forgetting_link(*, related_name: str) -> models.ForeignKey:
    """The forget that took a row (None: the row is in memory). PROTECT: a forget's row
    cannot be deleted while rows it took point to it (its purge deletes those rows)."""
    return models.ForeignKey(
        Forgetting,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name=related_name,
        verbose_name="oubli",
    )


class InMemoryManager(models.Manager):
    """Rows that are part of the memory: not forgotten (a forgotten row is reachable by no read)."""

    def get_queryset(self):
        return super().get_queryset().filter(forgetting__isnull=True)


class OwnerFactManager(InMemoryManager):
    """The owner's facts in memory: never the agent's self and goals (``Fact.kind``).

    The default manager of Fact, so every list, search, export and count that
    reads ``Fact.objects`` shows the owner's facts only unless it asks for the
    agent's items (memory.services.self_memory reads ``Fact.all_objects``).
    """

    def get_queryset(self):
        return super().get_queryset().filter(kind=FactKind.OWNER)


class MessageManager(InMemoryManager):
    """Messages that feed the memory: not forgotten, not part of a forget exchange."""

    def get_queryset(self):
        return super().get_queryset().filter(memory_excluded=False)


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

    channel = models.CharField("canal", max_length=64, db_index=True)
    role = models.CharField("rôle", max_length=16, choices=MessageRole.choices)
    author = models.CharField("auteur", max_length=128, blank=True, default="")
    source = models.CharField(
        max_length=16, choices=MessageSource.choices, default=MessageSource.USER
    )
    content = models.TextField(
        "contenu",
    )
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
    content = models.TextField(
        "contenu",
    )
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

    # The one date of a summary: the end of the period it covers (else its creation).
    @property
    def date(self):
        return self.period_end or self.created_at

    @staticmethod
    def date_expression():
        """``date`` inside a query (annotate, filter, order by)."""
        from django.db.models.functions import Coalesce

        return Coalesce("period_end", "created_at")


FACT_KEY_MESSAGE = (
    "La clé d'un fait ne peut pas contenir « / », « \\ » ni de retour à la ligne, "
    "ni être vide, ni commencer ou finir par un espace."
)


# The end of the key a forget sets a fact aside under while its own key is used again
# ("<key> (oubli n° N)", "<key> (fait oublié n° N)": memory.services.forgetting_restated).
# Only that code writes it: a fact written under it would be taken for the one set aside,
# and an undo would give it the owner's fact's key, or the owner's fact its key.
FACT_ASIDE_KEY_PATTERN = re.compile(r" \((?:oubli|fait oublié) n° \d+\)$")
FACT_KEY_RESERVED_MESSAGE = (
    "La clé « {key} » finit comme celle d'un fait mis de côté par un oubli "
    "(« (oubli n° N) » ou « (fait oublié n° N) ») : choisissez-en une autre."
)


def validate_fact_key_shape(value: str) -> None:
    """The key of a row this memory may hold, one a forget set aside included: it must fit
    in a URL path segment."""
    if (
        not value
        or value != value.strip()
        or any(c in value for c in "/\\")
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        raise ValidationError(FACT_KEY_MESSAGE, code="invalid_key")


def validate_fact_key(value: str) -> None:
    """The one key rule of a writer (model, admin, forms, API, tools, MCP, import): the
    shape above, and not the end of a key a forget sets a fact aside under (a fact that
    already holds one keeps it: fact_update, the admin and the import check its shape)."""
    validate_fact_key_shape(value)
    if FACT_ASIDE_KEY_PATTERN.search(value):
        raise ValidationError(FACT_KEY_RESERVED_MESSAGE.format(key=value), code="reserved_key")


FACT_VALUE_MAX_CHARS = 10_000
FACT_VALUE_TOO_LONG_MESSAGE = (
    "La valeur d'un fait est limitée à {limit} caractères (celle-ci en a {length}) : "
    "raccourcissez-la ou découpez-la en plusieurs faits."
)


def _french_number(n: int) -> str:
    return f"{n:,}".replace(",", "\u202f")  # 10 000, with a narrow no-break space


def validate_fact_value(value: str) -> None:
    """The one rule of a fact's value (model, admin, forms, API, tools, MCP): its length,
    refused with a message, never cut; and no NUL character (SQLite's LIKE and the FTS
    tokenizer stop at it: the rest of the value would escape a search and a forget)."""
    ProhibitNullCharactersValidator()(value)  # Django's rule and message, as DRF's
    if len(value) > FACT_VALUE_MAX_CHARS:
        message = FACT_VALUE_TOO_LONG_MESSAGE.format(
            limit=_french_number(FACT_VALUE_MAX_CHARS), length=_french_number(len(value))
        )
        raise ValidationError(message, code="too_long")


CATEGORY_INVALID_MESSAGE = "Catégorie invalide pour le genre « {kind} »."


SUBJECT_MAX_CHARS = 100
SUBJECTS_MAX = 50


def _validate_subjects(value: object) -> None:
    """The one rule of a fact's subjects (model, admin, /memory, API, import)."""
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValidationError("Les sujets doivent être une liste de mots.")
    if len(value) > SUBJECTS_MAX:
        raise ValidationError(f"Au plus {SUBJECTS_MAX} sujets.")
    if any(len(s) > SUBJECT_MAX_CHARS for s in value):
        raise ValidationError(f"Un sujet a au plus {SUBJECT_MAX_CHARS} caractères.")
    if any("\x00" in s for s in value):
        raise ValidationError(ProhibitNullCharactersValidator.message)


class Fact(Indexable):
    """A durable fact about the owner or the people around them (table core_memory)."""

    key = models.CharField("clé", max_length=200, unique=True, validators=[validate_fact_key])
    value = models.TextField("valeur", validators=[validate_fact_value])
    memory_type = models.CharField(
        "type de mémoire",
        max_length=16,
        choices=MemoryType.choices,
        default=MemoryType.FACT,
        db_index=True,
    )
    importance = models.FloatField(
        default=DEFAULT_IMPORTANCE[MemoryType.FACT],
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        db_index=True,  # the retrieval's T1 source reads the important facts on every message
    )
    subjects = models.JSONField("sujets", default=list, blank=True, validators=[_validate_subjects])
    source = models.CharField(
        max_length=16, choices=FactSource.choices, default=FactSource.MANUAL, db_index=True
    )
    channel = models.CharField("canal", max_length=64, blank=True, default="", db_index=True)
    source_message = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="facts",
        verbose_name="message d'origine",
    )
    expires_at = models.DateTimeField("expire le", null=True, blank=True, db_index=True)
    created_at = models.DateTimeField("créé le", default=timezone.now, db_index=True)
    updated_at = models.DateTimeField("modifié le", auto_now=True)
    last_accessed_at = models.DateTimeField("dernier accès", null=True, blank=True)
    access_count = models.PositiveIntegerField("nombre d'accès", default=0)
    forgotten = models.BooleanField("oublié", default=False, db_index=True)
    forgotten_at = models.DateTimeField("oublié le", null=True, blank=True)
    # The topic forget that took this fact (it is then out of every read path).
    forgetting = forgetting_link(related_name="facts")
    # Fields the owner set (user or admin): the agent never overwrites them.
    owner_fields = models.JSONField("champs fixés par le propriétaire", default=list, blank=True)
    # Whose memory it is: the owner's (default) or the agent's self / goals, with
    # their category (memory.services.self_memory). Same table, same revisions,
    # dedup, indexing and forgetting; the default manager shows owner facts only.
    kind = models.CharField(
        "genre", max_length=8, choices=FactKind.choices, default=FactKind.OWNER, db_index=True
    )
    category = models.CharField("catégorie", max_length=24, blank=True, default="")

    all_objects = Manager()
    objects = OwnerFactManager()

    class Meta:
        base_manager_name = "all_objects"
        default_manager_name = "objects"
        db_table = "core_memory"
        verbose_name = "fait"
        verbose_name_plural = "faits"
        ordering = ["-importance", "key"]
        indexes = [
            # The agent's self and goals summary, read on every message: its most
            # important items of one kind, read in order (no scan of the owner's facts).
            models.Index(
                fields=["kind", "-importance", "-updated_at", "-id"], name="core_memory_kind_rank"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} = {self.value[:60]}"

    def clean(self) -> None:
        if self.category not in KIND_CATEGORIES.get(self.kind, ()):
            raise ValidationError({"category": CATEGORY_INVALID_MESSAGE.format(kind=self.kind)})

    @property
    def category_label(self) -> str:
        return CATEGORY_LABELS.get(self.category, self.category)

    # The one date of a fact (the time the retrieval's "when" filter reads, the
    # date shown beside it, the order of "newest first"): when it was last stated.
    DATE_FIELD = "updated_at"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def date(self):
        return getattr(self, self.DATE_FIELD)

    @property
    def has_valid_key(self) -> bool:
        """False for a row written before the key rule (or behind the model's back); a key
        a forget set the fact aside under is valid (only the forget writes it)."""
        try:
            validate_fact_key_shape(self.key)
        except ValidationError:
            return False
        return True


class AgentItemManager(InMemoryManager):
    def get_queryset(self):
        return super().get_queryset().exclude(kind=FactKind.OWNER)


class AgentItem(Fact):
    """The agent's self and goals: Fact rows of kind self / goal (the admin lists them apart)."""

    objects = AgentItemManager()

    class Meta:
        proxy = True
        base_manager_name = "all_objects"
        default_manager_name = "objects"
        ordering = ["kind", "category", "-importance", "key"]
        verbose_name = "souvenir de l'agent sur lui-même"
        verbose_name_plural = "moi & objectifs de l'agent"


class FactRevision(models.Model):
    """One change of a fact: who made it, why, and the value before and after."""

    fact = models.ForeignKey(
        Fact, on_delete=models.CASCADE, related_name="revisions", verbose_name="fait"
    )
    actor = models.CharField("par", max_length=16, choices=Actor.choices)
    reason = models.CharField("raison", max_length=16, choices=RevisionReason.choices)
    old_value = models.TextField("ancienne valeur", blank=True, default="")
    new_value = models.TextField("nouvelle valeur", blank=True, default="")
    # Other fields that changed, as {"field": [old, new]}.
    changes = models.JSONField("changements", default=dict, blank=True)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField("date", default=timezone.now, db_index=True)
    # A topic forget that took this line of a fact it left (an old value about the topic).
    forgetting = forgetting_link(related_name="revisions")

    all_objects = Manager()
    objects = InMemoryManager()

    class Meta:
        base_manager_name = "all_objects"
        default_manager_name = "objects"
        verbose_name = "révision"
        verbose_name_plural = "révisions"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_reason_display()} ({self.get_actor_display().lower()})"


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
    search_min_score = models.FloatField(
        "score minimum des recherches",
        default=0.3,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    block_max_tokens = models.PositiveIntegerField(
        "tokens maximum du bloc mémoire",
        default=1000,
        validators=[MinValueValidator(100), MaxValueValidator(8000)],
    )
    forget_retention_days = models.PositiveSmallIntegerField(
        "jours pendant lesquels un oubli est annulable",
        default=7,
        validators=[MinValueValidator(0), MaxValueValidator(90)],
    )
    history_length = models.PositiveSmallIntegerField(
        "longueur de l'historique",
        default=20,
        validators=[MinValueValidator(1), MaxValueValidator(200)],
    )
    reinjection_turns = models.PositiveSmallIntegerField(
        "tours pendant lesquels un souvenir retrouvé reste dans le prompt",
        default=3,
        validators=[MinValueValidator(0), MaxValueValidator(50)],
    )
    live_max_results = models.PositiveSmallIntegerField(
        "extraits maximum des salons observés",
        default=10,
        validators=[MinValueValidator(0), MaxValueValidator(20)],
    )
    updated_at = models.DateTimeField("modifié le", auto_now=True)

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
        """The settings row (created with the defaults the first time).

        Read on every message: the SQL is compiled once (memory.stores.compiled).
        """
        found = _SETTINGS_ROW.instances()
        if found:
            return found[0]
        obj, _ = cls.objects.get_or_create(pk=cls.SINGLETON_ID)
        return obj


_SETTINGS_ROW = CompiledRead(
    lambda _now: MemorySettings.objects.filter(pk=MemorySettings.SINGLETON_ID)
)


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
        verbose_name = "injection de mémoire"
        verbose_name_plural = "journal de l'auto-retrieval"
        ordering = ["-created_at", "-id"]
        # A channel's last retrievals (what the LLM still sees) without sorting its whole log.
        indexes = [
            models.Index(fields=["channel", "created_at", "id"], name="retrievals_channel_time")
        ]

    def __str__(self) -> str:
        return f"[{self.channel}] {self.message_preview[:60]}"


class JobState(models.TextChoices):
    QUEUED = "queued", "En file"
    RUNNING = "running", "En cours"
    DONE = "done", "Terminé"
    FAILED = "failed", "Échec"


class JobKind(models.TextChoices):
    """The kinds memory.services.jobs.HANDLERS runs (labels for the admin)."""

    EXTRACT = "extract", "Extraction de faits"
    COMPACT = "compact", "Compaction"
    POINTS_REMOVE = "points_remove", "Retrait de points Qdrant"
    DIGEST = "digest", "Digest des salons observés"


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
    stores nothing; the fingerprint tells a retry from another request reusing
    the key. Holds ids only, never content.
    """

    key = models.CharField("clé", max_length=128, unique=True)
    fingerprint = models.CharField("empreinte", max_length=64)
    message_ids = models.JSONField("messages", default=list)
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


CHANNEL_OBSERVED_HELP = (
    "Les messages d'un salon observé sont gardés et cherchés par l'auto-retrieval "
    "(collection live) ; l'agent n'y répond pas. Le digest en tire les faits durables."
)


class ChannelSettings(models.Model):
    """Per-channel settings (table memory_channels): whether the channel is observed."""

    channel = models.CharField("canal", max_length=64, unique=True)
    observed = models.BooleanField("observé", default=False, help_text=CHANNEL_OBSERVED_HELP)
    updated_at = models.DateTimeField("modifié le", auto_now=True)

    class Meta:
        db_table = "memory_channels"
        ordering = ["channel"]
        verbose_name = "réglages d'un canal"
        verbose_name_plural = "réglages des canaux"

    def __str__(self) -> str:
        return f"{self.channel} ({'observé' if self.observed else 'normal'})"


class DigestState(models.TextChoices):
    RUNNING = "running", "En cours"
    DONE = "done", "Terminé"
    WAITING = "waiting", "En attente (pas de LLM)"
    FAILED = "failed", "Échec"


class Digest(models.Model):
    """One run of the digest of the observed rooms (table memory_digests): what it read and stored."""

    started_at = models.DateTimeField("commencé le", default=timezone.now, db_index=True)
    finished_at = models.DateTimeField("terminé le", null=True, blank=True)
    state = models.CharField(
        "état", max_length=8, choices=DigestState.choices, default=DigestState.RUNNING
    )
    # "schedule" (a fixed hour or the catch-up at start) or "manual" (forced).
    trigger = models.CharField("déclenchement", max_length=16, default="schedule")
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
