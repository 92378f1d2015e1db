"""Which language a text is written in, French or English, told by its stop words.

The semantic and live sources' cross-language calibration reads it (memory.services.
retrieval.semantic, .live): the bundled e5 model scores a question and its answer about 0.035 lower when
one is French and the other English (the nine evaluation sets: p10 / p50 of the answers'
cosine 0.796 / 0.831 across languages, 0.829 / 0.866 within one), so `min_score` and the
relevance gate's margin give a point in the other language that much back. A point's
language is read when it is indexed (its payload's ``lang``, memory.services.
index_documents), the query's on every message: a count of words, no model.
"""

from __future__ import annotations

from memory.services.keywords import STOP_WORDS_EN, STOP_WORDS_FR
from memory.stores.fts import fold, query_terms

FRENCH = "fr"
ENGLISH = "en"
# The words only one of the two languages has (« a », « on », « as » are both's: neither).
_FRENCH_ONLY = frozenset(fold(w) for w in STOP_WORDS_FR) - frozenset(STOP_WORDS_EN)
_ENGLISH_ONLY = frozenset(STOP_WORDS_EN) - frozenset(fold(w) for w in STOP_WORDS_FR)


def text_language(text: str) -> str:
    """FRENCH or ENGLISH by the stop words of each the text holds (its first distinct
    words, fts.query_terms), "" when they tie: « Doliprane 6h », a name, an emoji."""
    french = english = 0
    for word in query_terms(text):
        french += word in _FRENCH_ONLY
        english += word in _ENGLISH_ONLY
    if french == english:
        return ""
    return FRENCH if french > english else ENGLISH


def other_language(query_language: str, point_language: str | None) -> bool:
    """Whether a point is known to be in the other language than the query (either
    unknown, "" or a point indexed before its language was recorded: no)."""
    return bool(query_language and point_language) and point_language != query_language
