"""French labels for the codes stored in memory rows (types, roles, kinds, sources)."""

from __future__ import annotations

from django import template

from memory.models import MemoryType, MessageRole

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
