"""French labels for the codes stored in memory rows (types, roles, kinds, sources)."""

from __future__ import annotations

from django import template

from memory.models import MemoryType, MessageRole
from memory.models.choices import fact_kind_label, is_owner_kind
from memory.services.forgetting_plan import facts_total_text

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
    "t1": "T1",
    "notes": "notes",
}


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
def facts_count(count: object) -> str:
    """A forget's count of Fact rows, in French: the owner's facts and the agent's items."""
    return facts_total_text(int(count or 0))
