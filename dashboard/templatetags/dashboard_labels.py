"""French labels for the codes stored in memory rows (types, roles, kinds, sources)."""

from __future__ import annotations

import builtins
import re

from django import template

from memory import exceptions
from memory.models import MemoryType, MessageRole
from memory.models.choices import fact_kind_label, is_owner_kind
from memory.services.forgetting_plan import facts_total_text
from memory.services.retrieval.result import MSG_SOURCE_FAILED

register = template.Library()

LABELS: dict[str, str] = {
    **dict(MessageRole.choices),
    **dict(MemoryType.choices),
    "exchange": "Échange",
    "message": "Message",
    "summary": "Résumé",
    "live": "Salon observé",
    "semantic": "sémantique",
    "fts": "mots-clés",
    "keywords": "mots-clés",
    "time": "période",
    "t1": "T1",
    "notes": "notes",
    "fusion": "fusion",
    "prefetch": "préchargement",
}

# A retrieval's timed steps, as the log's line names them (QA: « embed 38,3 ms · keywords… »).
TIMING_LABELS: dict[str, str] = {
    "embed": "plongement",
    "semantic": "sémantique",
    "qdrant": "Qdrant",
    "keywords": "mots-clés",
    "t1": "T1",
    "prefetch": "préchargement",
    "live": "salons",
    "notes": "notes",
    "fusion": "fusion",
    "log": "journal",
    "total": "en tout",
}
_TIMEOUT = re.compile(r"^timeout after (\d+) ms$")
# A failure logged before failure_text said it in French: « ClassName: message ».
_CLASS_PREFIXED = re.compile(r"^([A-Z][A-Za-z0-9_]*): (.*)$", re.DOTALL)


@register.filter
def timing_label(name: object) -> object:
    """The French name of a retrieval's timed step; unknown ones as they are."""
    return TIMING_LABELS.get(str(name), name)


@register.filter
def failure_said(reason: object) -> str:
    """Why a retrieval source failed, in French: a time limit (stored in English) said
    in words, an error as failure_text stored it (already French). A row logged before
    that held « ClassName: message »: the memory's own message, or the French note."""
    text = str(reason or "")
    if timeout := _TIMEOUT.match(text):
        return f"pas de réponse en {timeout.group(1)} ms"
    if text == "timeout":  # a source's own limit (the notes' vault)
        return "pas de réponse à temps"
    if legacy := _CLASS_PREFIXED.match(text):
        text = _legacy_failure_said(legacy.group(1), legacy.group(2))
    return f"erreur : {text}" if text else "erreur"


def _legacy_failure_said(name: str, message: str) -> str:
    """« ClassName: message » of an older log row, without the class name: the message of
    one of the memory's own errors; the French note for a Python or library error (their
    names end like these); anything else is a French text that happens to hold a colon."""
    own = getattr(exceptions, name, None)
    if isinstance(own, type) and issubclass(own, exceptions.MemoryServiceError):
        return message
    foreign = getattr(builtins, name, None)
    if (isinstance(foreign, type) and issubclass(foreign, BaseException)) or name.endswith(
        ("Error", "Exception", "Timeout", "Refused", "Unavailable")
    ):
        return MSG_SOURCE_FAILED
    return f"{name}: {message}"


@register.filter
def label(code: object) -> object:
    """The French label of a stored code; unknown codes are shown as they are."""
    return LABELS.get(str(code), code) if code not in (None, "") else code


@register.filter
def fact_kind(kind: object) -> str:
    """The French name of a Fact row's kind (memory.models.choices.FACT_KIND_LABELS)."""
    return fact_kind_label(kind)


@register.filter
def is_owner_fact(kind: object) -> bool:
    """Whether a Fact row's kind is the owner's (memory.models.choices.is_owner_kind)."""
    return is_owner_kind(kind)


@register.filter
def forget_counts(counts: object) -> str:
    """What a forget took (Forgetting.counts, ForgetResult.counts), in French: the owner's
    facts and the agent's items together, and the lines of history when it took some."""
    counts = counts if isinstance(counts, dict) else {}
    text = (
        f"{counts.get('exchanges') or 0} échange(s), "
        f"{facts_total_text(int(counts.get('facts') or 0))}, "
        f"{counts.get('summaries') or 0} résumé(s)"
    )
    if counts.get("history"):
        text += f", {counts['history']} ligne(s) d'historique"
    return text


# A fact's fields as its history names them (QA: « expires_at : — → 2026-12-14T13:52…»).
FACT_FIELD_LABELS: dict[str, str] = {
    "value": "valeur",
    "memory_type": "type",
    "importance": "importance",
    "subjects": "sujets",
    "source": "source",
    "channel": "canal",
    "expires_at": "expiration",
    "category": "catégorie",
    "key": "clé",
    "kind": "nature",
}
# Who wrote a revision, as « Modifié par … » reads.
ACTOR_BY: dict[str, str] = {
    "user": "le propriétaire",
    "admin": "l'administration",
    "agent": "l'agent",
    "system": "le système",
}


@register.filter
def fact_field(name: object) -> str:
    """The French name of a fact's field in its history; an unknown one as it is."""
    return FACT_FIELD_LABELS.get(str(name), str(name))


@register.filter
def owner_fields_said(fact: object) -> list[str]:
    """The fields of ``fact`` the owner holds (``Fact.owner_fields``: the agent never
    changes them), by their French names (FACT_FIELD_LABELS), in the card's order."""
    held = set(getattr(fact, "owner_fields", None) or [])
    named = [FACT_FIELD_LABELS[name] for name in FACT_FIELD_LABELS if name in held]
    return named + sorted(str(name) for name in held - set(FACT_FIELD_LABELS))


@register.filter
def actor_by(actor: object) -> str:
    """Who made a revision, after « par »."""
    return ACTOR_BY.get(str(actor), str(actor))


@register.filter
def change_value(value: object, field: object = "") -> object:
    """A value of a history line (of ``field``) as the page shows the fact's: a stored
    moment in the local time (« 14/12/2026 14:52 »), a type or a source by its French
    name, a list joined; anything else as it is."""
    from django.utils import timezone
    from django.utils.dateparse import parse_datetime

    from memory.models import FactSource
    from memory.models.choices import CATEGORY_LABELS

    names = {
        "memory_type": dict(MemoryType.choices),
        "source": dict(FactSource.choices),
        "category": CATEGORY_LABELS,
    }
    if str(field) in names and isinstance(value, str):
        return names[str(field)].get(value, value)
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, str) and len(value) >= 19 and value[4:5] == "-" and "T" in value:
        moment = parse_datetime(value)
        if moment is not None and timezone.is_aware(moment):
            return timezone.localtime(moment).strftime("%d/%m/%Y %H:%M")
    return value
