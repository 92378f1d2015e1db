"""The choices of T1's fields: kinds, sources, states and their French labels."""

from __future__ import annotations

from django.db import models


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


# The French name of a Fact row by its kind, as a list of memories names it (the dashboard,
# the forget's dry run): the owner's is a "fait"; the agent's self items and goals are named
# as the model names them. A plain map: the choices' labels stay as migrated.
FACT_KIND_LABELS: dict[str, str] = {**dict(FactKind.choices), FactKind.OWNER: "fait"}


def is_owner_kind(kind: object) -> bool:
    """Whether a Fact row's kind is the owner's (FactKind.OWNER); a row without one is."""
    return kind in (None, "") or str(kind) == FactKind.OWNER


def fact_kind_label(kind: object) -> str:
    """The French name of a Fact row's kind; a row without one is the owner's fact."""
    return FACT_KIND_LABELS.get(str(kind), FACT_KIND_LABELS[FactKind.OWNER])


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


class ForgettingState(models.TextChoices):
    ACTIVE = "active", "Oublié (annulable)"
    RESTORED = "restored", "Restauré"
    PURGED = "purged", "Effacé définitivement"


class ForgetSelection(models.TextChoices):
    WORDS = "words", "Tous les mots du sujet"
    LLM = "llm", "Jugement du LLM"
    ERASE = "erase", "Effacement direct"


class MessageRole(models.TextChoices):
    USER = "user", "Utilisateur"
    ASSISTANT = "assistant", "Assistant"
    SYSTEM = "system", "Système"
    TOOL = "tool", "Outil"


class MessageSource(models.TextChoices):
    USER = "user", "Utilisateur"
    SYSTEM = "system", "Système"
    TOOL = "tool", "Outil"


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


class DigestState(models.TextChoices):
    RUNNING = "running", "En cours"
    DONE = "done", "Terminé"
    WAITING = "waiting", "En attente (pas de LLM)"
    FAILED = "failed", "Échec"


class DigestTrigger(models.TextChoices):
    SCHEDULE = "schedule", "Programmée"  # a fixed hour, or the catch-up at start
    MANUAL = "manual", "Forcée"
