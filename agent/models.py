"""LLM usage accounting (table llm_usage), and the agent's forget dry runs."""

from decimal import Decimal

from django.db import models
from django.utils import timezone


class Purpose(models.TextChoices):
    CHAT = "chat", "Conversation"
    EXTRACTION = "extraction", "Extraction de faits"
    COMPACTION = "compaction", "Compaction"
    DEDUP = "dedup", "Déduplication"
    DIGEST = "digest", "Synthèse"
    FORGET = "forget", "Tri de l'oubli"


class LlmUsage(models.Model):
    """One LLM call: model, purpose, tokens and what it cost."""

    created_at = models.DateTimeField("date", default=timezone.now, db_index=True)
    model = models.CharField("modèle", max_length=100)
    purpose = models.CharField("usage", max_length=16, choices=Purpose.choices, db_index=True)
    channel = models.CharField("canal", max_length=64, blank=True, default="")
    input_tokens = models.PositiveIntegerField("jetons d'entrée", default=0)
    output_tokens = models.PositiveIntegerField("jetons de sortie", default=0)
    # The part of input_tokens that the auto-retrieval block added.
    retrieval_tokens = models.PositiveIntegerField("jetons de l'auto-retrieval", default=0)
    cost_usd = models.DecimalField(
        "coût (USD)", max_digits=12, decimal_places=6, default=Decimal("0")
    )
    # A streamed answer cut before its final usage event: its output tokens are an
    # estimate from the text received (its input tokens come from message_start).
    estimated = models.BooleanField("jetons estimés", default=False)
    retrieval = models.ForeignKey(
        "memory.MemoryRetrieval",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        verbose_name="auto-retrieval",
    )

    class Meta:
        db_table = "llm_usage"
        ordering = ["-created_at", "-id"]
        verbose_name = "usage LLM"
        verbose_name_plural = "usage LLM"

    def __str__(self) -> str:
        return f"{self.model} {self.purpose} {self.input_tokens}+{self.output_tokens}"


class UsageDay(models.Model):
    """LLM usage summed per local day, purpose and model: what /costs reads.

    Kept by ``agent.usage.usage_record`` in the transaction that writes the
    call's row, so the raw ``llm_usage`` rows can be purged after their
    retention window while the spend history stays whole.
    """

    day = models.DateField("jour")
    purpose = models.CharField("usage", max_length=16, choices=Purpose.choices)
    model = models.CharField("modèle", max_length=100)
    calls = models.PositiveIntegerField("appels", default=0)
    input_tokens = models.PositiveBigIntegerField("jetons d'entrée", default=0)
    output_tokens = models.PositiveBigIntegerField("jetons de sortie", default=0)
    retrieval_tokens = models.PositiveBigIntegerField("jetons de l'auto-retrieval", default=0)
    cost_usd = models.DecimalField(
        "coût (USD)", max_digits=14, decimal_places=6, default=Decimal("0")
    )
    # Calls whose output tokens are an estimate (LlmUsage.estimated: a cut stream).
    estimated_calls = models.PositiveIntegerField("appels estimés", default=0)

    class Meta:
        db_table = "llm_usage_daily"
        ordering = ["-day", "purpose", "model"]
        constraints = [
            models.UniqueConstraint(fields=["day", "purpose", "model"], name="llm_usage_day_key")
        ]
        verbose_name = "usage LLM par jour"
        verbose_name_plural = "usage LLM par jour"

    def __str__(self) -> str:
        return f"{self.day} {self.purpose} {self.model}: {self.calls} appels"


class ForgetPreview(models.Model):
    """A forget's dry run shown by the agent: the ids an agreement given without them takes.

    Kept in SQLite, not in the process: `serve` restarted between the dry run and the
    owner's "oui" turned the agreement into a new selection, which could take what the
    owner was never shown (agent.tools_forget). The topic is kept as a digest of its
    words, never as text; a preview nobody agreed to is dropped after
    ``agent.tools_forget.FORGET_PREVIEW_KEEP_S``.
    """

    channel = models.CharField("canal", max_length=64)
    terms_digest = models.CharField("mots du sujet (empreinte)", max_length=64)
    ids = models.JSONField("éléments montrés", default=list)
    created_at = models.DateTimeField("créé le", default=timezone.now, db_index=True)

    class Meta:
        db_table = "agent_forget_preview"
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "terms_digest"], name="agent_forget_preview_key"
            )
        ]
        verbose_name = "aperçu d'oubli"
        verbose_name_plural = "aperçus d'oubli"

    def __str__(self) -> str:
        return f"{self.channel}: {len(self.ids)} éléments"
