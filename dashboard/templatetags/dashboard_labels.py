"""French labels for the codes stored in memory rows (types, roles, kinds, sources)."""

from __future__ import annotations

from django import template

from memory.models import FactKind, MemoryType, MessageRole

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


# Whose memory a Fact row is (FactKind), as a list of memories names it: the owner's is a
# "fait"; the agent's self items and goals are named as the model names them.
FACT_KIND_LABELS: dict[str, str] = {**dict(FactKind.choices), FactKind.OWNER: "fait"}


@register.filter
def fact_kind(kind: object) -> str:
    """The French name of a Fact row's kind; a row without one is the owner's fact."""
    return FACT_KIND_LABELS.get(str(kind), FACT_KIND_LABELS[FactKind.OWNER])
