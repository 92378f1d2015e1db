"""Facts (the owner's, the agent's self and goals) and their revisions."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Manager
from django.utils import timezone

from memory.models.base import Indexable, InMemoryManager, forgetting_link
from memory.models.choices import (
    CATEGORY_LABELS,
    DEFAULT_IMPORTANCE,
    KIND_CATEGORIES,
    Actor,
    FactKind,
    FactSource,
    MemoryType,
    RevisionReason,
)
from memory.models.conversation import Message
from memory.models.rules import (
    CATEGORY_INVALID_MESSAGE,
    LocalizedMaxValueValidator,
    LocalizedMinValueValidator,
    _validate_subjects,
    validate_fact_channel,
    validate_fact_key,
    validate_fact_key_shape,
    validate_fact_value,
)


class OwnerFactManager(InMemoryManager):
    """The owner's facts in memory: never the agent's self and goals (``Fact.kind``).

    The default manager of Fact, so every list, search, export and count that
    reads ``Fact.objects`` shows the owner's facts only unless it asks for the
    agent's items (memory.services.self_memory reads ``Fact.all_objects``).
    """

    def get_queryset(self):
        return super().get_queryset().filter(kind=FactKind.OWNER)


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
        validators=[LocalizedMinValueValidator(0.0), LocalizedMaxValueValidator(1.0)],
        db_index=True,  # the retrieval's T1 source reads the important facts on every message
    )
    subjects = models.JSONField("sujets", default=list, blank=True, validators=[_validate_subjects])
    source = models.CharField(
        max_length=16, choices=FactSource.choices, default=FactSource.MANUAL, db_index=True
    )
    channel = models.CharField(
        "canal",
        max_length=64,
        blank=True,
        default="",
        db_index=True,
        validators=[validate_fact_channel],
    )
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
