"""What rows of several tables share: the indexing state, the forget that took a row."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from memory.models.choices import Actor, ForgetSelection, ForgettingState, IndexState


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
    # The user messages of the chat turns that asked for this forget (its dry run's too):
    # kept out of memory (memory_excluded), they name the topic, so its purge or erasure
    # deletes them with their replies; an undo leaves them out of memory.
    request_message_ids = models.JSONField("demande", default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "oubli"
        verbose_name_plural = "oublis"

    def __str__(self) -> str:
        return f"{self.topic[:60]} ({self.get_state_display()})"

    @property
    def undoable(self) -> bool:
        """Active and within its window: an undo may still give back what it took."""
        return self.state == ForgettingState.ACTIVE and self.purge_after > timezone.now()


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
