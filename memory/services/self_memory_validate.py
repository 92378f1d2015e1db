"""What an item of the agent's self or goals must be, and the key it is stored under.

Shared by the reads (memory.services.self_memory_reads) and the writes
(memory.services.self_memory) of these items, and by their seed: the kind and
category checked, the content cleaned and capped with a French message, and the
folded words that a key, a restatement and a search by words compare.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import ProhibitNullCharactersValidator

from memory.exceptions import MemoryServiceError
from memory.models import KIND_CATEGORIES, FactKind

AGENT_KINDS = (FactKind.SELF, FactKind.GOAL)
CONTENT_MAX_CHARS = 1000

KIND_INVALID_MESSAGE = "Genre inconnu : « {kind} » (attendu : self ou goal)."
CATEGORY_INVALID_MESSAGE = "Catégorie inconnue pour {kind} : « {category} » (attendu : {allowed})."
CONTENT_EMPTY_MESSAGE = "Le contenu est vide."
CONTENT_TOO_LONG_MESSAGE = "Le contenu est limité à {limit} caractères (il en a {length})."


def _no_nul(text: str) -> None:
    """The rule (and French message) DRF's CharField applies to every other tool's text."""
    try:
        ProhibitNullCharactersValidator()(text)
    except DjangoValidationError as exc:
        raise MemoryServiceError(exc.messages[0]) from None


def agent_item_validate(*, kind: str, category: str, content: str) -> str:
    """The cleaned content, or MemoryServiceError with a French message."""
    if kind not in AGENT_KINDS:
        raise MemoryServiceError(KIND_INVALID_MESSAGE.format(kind=kind))
    allowed = KIND_CATEGORIES[kind]
    if category not in allowed:
        raise MemoryServiceError(
            CATEGORY_INVALID_MESSAGE.format(
                kind=kind, category=category, allowed=", ".join(allowed)
            )
        )
    if not isinstance(content, str) or not content.strip():
        raise MemoryServiceError(CONTENT_EMPTY_MESSAGE)
    _no_nul(content)
    content = " ".join(content.split())
    if len(content) > CONTENT_MAX_CHARS:
        raise MemoryServiceError(
            CONTENT_TOO_LONG_MESSAGE.format(limit=CONTENT_MAX_CHARS, length=len(content))
        )
    return content


def _folded_words(text: str) -> list[str]:
    """Lower-case words without accents ("N'ai-je" -> ["n", "ai", "je"])."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return re.findall(r"[a-z0-9]+", plain)


def agent_item_key(*, kind: str, content: str) -> str:
    """The stable key of an item: its kind, first words and a hash of its words.

    Case, accents and punctuation do not change it, so "Je peux lire le Lobby."
    restated as "je peux lire le lobby" is the same row (nothing written).
    """
    words = _folded_words(content)
    digest = hashlib.sha1(" ".join(words).encode()).hexdigest()[:10]
    head = "_".join(words[:6])[:60].strip("_")
    return f"{kind}_{head}_{digest}" if head else f"{kind}_{digest}"


NEGATIONS = frozenset({"ne", "n", "pas", "plus", "jamais", "aucun", "aucune", "non", "sans"})
