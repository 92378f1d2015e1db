"""The one rule of each fact field several writers check: key, value, subjects, category;
and the range validators of every bounded number (a fact's importance, the settings)."""

from __future__ import annotations

import re
import unicodedata

from django.core import validators
from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.utils.deconstruct import deconstructible
from django.utils.formats import number_format

FACT_KEY_MESSAGE = (
    "La clé d'un fait ne peut contenir ni « / », ni « \\ », ni retour à la ligne, ni "
    "autre caractère de contrôle (une tabulation par exemple) ; elle ne peut pas non plus "
    "être vide, n'être que « . » ou « .. », ni commencer ou finir par une espace."
)


# The end of the key a forget sets a fact aside under while its own key is used again
# ("<key> (oubli n° N)", "<key> (fait oublié n° N)": memory.services.forgetting_restated).
# Only that code writes it: a fact written under it would be taken for the one set aside,
# and an undo would give it the owner's fact's key, or the owner's fact its key.
# In any letters: "(OUBLI N° 1)" would be taken for it by a key matched without case.
FACT_ASIDE_KEY_PATTERN = re.compile(r" \((?:oubli|fait oublié) n° \d+\)$", re.IGNORECASE)
FACT_KEY_RESERVED_MESSAGE = (
    "La clé « {key} » finit comme celle d'un fait mis de côté par un oubli "
    "(« (oubli n° N) » ou « (fait oublié n° N) ») : choisissez-en une autre."
)


def validate_fact_key_shape(value: str) -> None:
    """The key of a row this memory may hold, one a forget set aside included: it must fit
    in a URL path segment, and « . » or « .. » do not (browsers and HTTP clients remove
    such a segment, RFC 3986: /memory/facts/../forget/ reached another URL, QA)."""
    if (
        not value
        or value in (".", "..")
        or value != value.strip()
        or any(c in value for c in "/\\")
        or any(ord(c) < 32 or ord(c) == 127 for c in value)
    ):
        raise ValidationError(FACT_KEY_MESSAGE, code="invalid_key")


FACT_KEY_INVISIBLE_MESSAGE = (
    "La clé d'un fait ne peut pas contenir de caractère invisible ou de contrôle "
    "(ici {code}) : elle ressemblerait à une autre clé sans en être une."
)
# What a key must not hold, being seen as nothing or as a plain space: controls, line and
# paragraph separators, private-use and unpaired surrogates, format characters (zero-width
# space, joiners, the byte-order mark, bidirectional controls), spaces other than " ",
# and Unicode's other default-ignorable code points (variation selectors, the combining
# grapheme joiner, Hangul fillers...) with the blank braille pattern.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs", "Co", "Cs"})
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Joiners and selectors that are part of what is seen after a character of another script
# or an emoji (👨‍👩‍👧, ❤️, a flag's tags, the Persian ZWNJ); after an ASCII one they hide.
_JOINERS = frozenset({0x200C, 0x200D, 0xFE0E, 0xFE0F, *range(0xE0020, 0xE0080)})


def _unseen(char: str, before: str) -> bool:
    code = ord(char)
    if code in _JOINERS and before and ord(before) > 0x7F:
        return False
    if char == " ":
        return False
    if unicodedata.category(char) in _INVISIBLE_CATEGORIES:
        return True
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


def invisible_in(value: str) -> str | None:
    """The first character of ``value`` nobody sees, as U+XXXX; None when there is none."""
    for index, char in enumerate(value):
        if _unseen(char, value[index - 1] if index else ""):
            return f"U+{ord(char):04X}"
    return None


def shows_nothing(value: str) -> bool:
    """Whether ``value`` shows nothing: spaces, and characters nobody sees (« \u200b »)."""
    return all(char.isspace() or _unseen(char, "") for char in value)


CHANNEL_MAX = 64
BAD_CHANNEL = (
    "Le canal doit être un nom court (lettres, chiffres, « - », « _ » et « . », mais pas « . » "
    "ou « .. » seuls), 64 caractères au plus."
)


def channel_well_formed(channel: str) -> bool:
    """The channels' one rule (a message's, a search filter's, a fact's): a short name of
    letters, digits, « - », « _ » and « . », but not « . » or « .. » alone (browsers and HTTP
    clients remove such a path segment: /channels/.. reached another URL, QA)."""
    return (
        bool(channel)
        and channel not in (".", "..")
        and len(channel) <= CHANNEL_MAX
        and all(c.isalnum() or c in "-_." for c in channel)
    )


def validate_channel(value: str) -> None:
    """A channel a message could have (the chat API's, a message's): the rule above."""
    if not channel_well_formed(value):
        raise ValidationError(BAD_CHANNEL, code="bad_channel")


def validate_fact_channel(value: str) -> None:
    """A fact's channel: none (a fact of every channel) or one a message could have (QA: a
    fact under « bad channel/.. » could not even be found by a search's channel filter)."""
    if value:
        validate_channel(value)


def validate_fact_key(value: str) -> None:
    """The one key rule of a writer (model, admin, forms, API, tools, MCP, import): the
    shape above, no character nobody sees (a key holding a zero-width space looked exactly
    like another on the pages and in the prompt), and not the end of a key a forget sets a
    fact aside under (a fact that already holds one keeps it: fact_update, the admin and
    the import check its shape)."""
    validate_fact_key_shape(value)
    if (code := invisible_in(value)) is not None:
        raise ValidationError(FACT_KEY_INVISIBLE_MESSAGE.format(code=code), code="invisible_key")
    if fact_key_reserved(value):
        raise ValidationError(FACT_KEY_RESERVED_MESSAGE.format(key=value), code="reserved_key")


# The reserved end once letters' width, case and accents are loosened: « （fait oublié
# n° 10） » in wide letters, « (fait oublie n° 10) » without its accent.
_ASIDE_LOOSENED = re.compile(r"\(\s*(?:oubli|fait\s+oublie)\s+n\s*[°o]?\s*\d+\s*\)$")


def fact_key_reserved(value: str) -> bool:
    """Whether a key ends as a key a forget sets a fact aside under, or looks like one
    (letters' width, case, accents). A key stored before this rule keeps it (the import)."""
    if FACT_ASIDE_KEY_PATTERN.search(value):
        return True
    return (
        _ASIDE_LOOSENED.search(unicodedata.normalize("NFKC", _unaccented(value)).casefold())
        is not None
    )


def _unaccented(value: str) -> str:
    """``value`` decomposed (NFKD: wide letters too) without its combining accents."""
    return "".join(c for c in unicodedata.normalize("NFKD", value) if not unicodedata.combining(c))


def fact_key_composed(value: str) -> str:
    """A key as every writer stores it and a lookup reads it: composed (NFC), so a « é »
    typed as « e » and a combining accent, which looks exactly alike, is the same key
    (migration 0027 composed the keys stored before)."""
    return unicodedata.normalize("NFC", value)


# Punctuation that says something in a key (« taux_% », « niveau_c# », « r&d »): kept,
# as symbols are (« c++ », « 🎂 », « € »). The rest of the punctuation, spaces and
# underscores separate words ("user_job", "user job", "user-job", "l'utilisateur" are
# shown alike in the prompt and the pages).
_KEY_MARKS_KEPT = frozenset("#%&@§")


def _key_separator(char: str) -> bool:
    if char in _KEY_MARKS_KEPT:
        return False
    return char.isspace() or unicodedata.category(char)[0] in "PZ"


# Every separator of the Basic Multilingual Plane as a space (str.translate: the database
# folds every key of a scan with it); one beyond it is kept as a symbol.
_KEY_SEPARATORS_AS_SPACES = {
    code: " " for code in range(0x10000) if _key_separator(chr(code)) and code != 0x20
}
# The rule before symbols were kept (every run of what is not a letter or a digit was
# one separator): the marks an erasure left then (memory.services.erased_marks).
_KEY_SEPARATORS_BEFORE = re.compile(r"[\W_]+")


def fact_key_folded(value: str) -> str:
    """What keys that look alike share, for the agent's statements: letter case and accents
    (« École_x », « ecole_x », « ÉCOLE_X »), letters' width (« ＵＳＥＲ » is « user »: NFKC),
    ligatures (« sœur » is « soeur », as the text fold has them), and the separators between
    words (« user job », « user-job », « user__job »); symbols
    and the marks of _KEY_MARKS_KEPT say something (« niveau_c++ » is not « niveau_c# »,
    « 🎂 » not « 💊 »: QA), and a key of separators alone folds to itself. The extraction's
    key rule (agent.extraction.normalize_key: fact_key_extracted) folds alike. The database
    has it as makilab_key_folded(key) (memory.db.backend)."""
    letters = _letters_folded(value).translate(_LIGATURES_WRITTEN_OUT)
    return _key_words(letters) or letters


def fact_key_folded_with_ligatures(value: str) -> str:
    """fact_key_folded as it was before ligatures were written out (« sœur » was not
    « soeur »: QA): the marks an erasure left then."""
    letters = _letters_folded(value)
    return _key_words(letters) or letters


def _key_words(letters: str) -> str:
    return "_".join(letters.translate(_KEY_SEPARATORS_AS_SPACES).split())


def fact_key_extracted(raw: str) -> str:
    """A key as the extraction writes it (agent.extraction.normalize_key): the model's key
    folded as the agent's keys fold (fact_key_folded: « Taux_% » is the owner's « taux_% »,
    « R&D » « r&d »), without the characters nobody sees; "" when no word is left."""
    visible = "".join(" " if _unseen(char, "") else char for char in raw)
    return _key_words(_letters_folded(visible))


def fact_key_folded_before(value: str) -> str:
    """fact_key_folded as it was before symbols counted (the marks left then)."""
    return _KEY_SEPARATORS_BEFORE.sub("_", _letters_folded(value)).strip("_")


def _letters_folded(value: str) -> str:
    return unicodedata.normalize("NFKC", _unaccented(value).casefold())


# What an edited export changes without changing what a text says: spacing (invisible
# spaces too), an apostrophe or a hyphen between two letters (« s'appelle », « garde-le »),
# the marks that end it. Signs, decimal commas and symbols say something (« -5 », « 1,5 »,
# « C++ »): kept.
_TEXT_SPACES = re.compile(r"[\s\u200b-\u200d\u2060\ufeff]+")
_TEXT_JOINERS = re.compile(r"(?<=[^\W\d_])['\u2019\u02bc\-\u2010\u2011_](?=[^\W\d_])")
_TEXT_END_MARKS = re.compile(r"[.!?\u2026]+$")


def text_folded(value: str, *, ligatures: bool = True) -> str:
    """A text as it looks, whatever an edited export retyped without changing what it says:
    case folded, without accents or letters' width, ligatures written out (« cœur » is
    « coeur », as the keyword indexes read it), spacing, an apostrophe or hyphen between
    letters, or the marks that end it (« S'appelle Xylophène, FR76 3000. » is
    « sappellexylophene,fr763000 »); signs, decimal commas and symbols are kept (« -5 » is
    not « 5 »). The texts' rule of memory.services.erased_marks; ``ligatures`` False: the
    rule before ligatures were written out (the marks left then)."""
    folded = _letters_folded(value)
    if ligatures:
        folded = folded.translate(_LIGATURES_WRITTEN_OUT)
    folded = _TEXT_JOINERS.sub("", folded)
    return _TEXT_END_MARKS.sub("", _TEXT_SPACES.sub("", folded))


# Ligatures as their letters, once case folded (QA: an erased « œuvre » came back as « oeuvre »).
_LIGATURES_WRITTEN_OUT = str.maketrans({"œ": "oe", "æ": "ae"})


FACT_VALUE_MAX_CHARS = 10_000
FACT_VALUE_BLANK_MESSAGE = "La valeur d'un fait ne peut pas être vide."
FACT_VALUE_TOO_LONG_MESSAGE = (
    "La valeur d'un fait est limitée à {limit} caractères (celle-ci en a {length}) : "
    "raccourcissez-la ou découpez-la en plusieurs faits."
)


def french_number(n: int) -> str:
    return f"{n:,}".replace(",", "\u202f")  # 10 000, with a narrow no-break space


def validate_fact_value(value: str) -> None:
    """The one rule of a fact's value (model, admin, forms, API, tools, MCP): its length,
    refused with a message, never cut; and no NUL character (SQLite's LIKE and the FTS
    tokenizer stop at it: the rest of the value would escape a search and a forget)."""
    ProhibitNullCharactersValidator()(value)  # Django's rule and message, as DRF's
    if shows_nothing(value):  # DRF's field refuses spaces; the admin and an import reach this
        raise ValidationError(FACT_VALUE_BLANK_MESSAGE, code="value_blank")
    if len(value) > FACT_VALUE_MAX_CHARS:
        message = FACT_VALUE_TOO_LONG_MESSAGE.format(
            limit=french_number(FACT_VALUE_MAX_CHARS), length=french_number(len(value))
        )
        raise ValidationError(message, code="too_long")


CATEGORY_INVALID_MESSAGE = "Catégorie invalide pour le genre « {kind} »."


SUBJECT_MAX_CHARS = 100
SUBJECTS_MAX = 50


def _validate_subjects(value: object) -> None:
    """The one rule of a fact's subjects (model, admin, /memory, API, import)."""
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValidationError("Les sujets doivent être une liste de mots.")
    if len(value) > SUBJECTS_MAX:
        raise ValidationError(f"Au plus {SUBJECTS_MAX} sujets.")
    if any(len(s) > SUBJECT_MAX_CHARS for s in value):
        raise ValidationError(f"Un sujet a au plus {SUBJECT_MAX_CHARS} caractères.")
    if any("\x00" in s for s in value):
        raise ValidationError(ProhibitNullCharactersValidator.message)
    if any(shows_nothing(s) for s in value):  # a badge with nothing in it (QA)
        raise ValidationError("Un sujet ne peut pas être vide.")


def number_said(value: float) -> str:
    """A number as the owner reads it, in the active language: « 0,8 » in French, and a
    whole number without decimals (« 1 », not « 1,0 »)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return number_format(value)


class _LimitSaid:
    """Django's range check, its limit said as the owner reads numbers: Django formats it
    with str() (« inférieure ou égale à 0.8 »). The /memory forms and the admin show
    these messages; the API keeps DRF's own (it maps these validators to its min_value
    and max_value, which say the limit as JSON writes it)."""

    def __call__(self, value) -> None:
        cleaned = self.clean(value)
        limit = self.limit_value() if callable(self.limit_value) else self.limit_value
        if self.compare(cleaned, limit):
            params = {"limit_value": number_said(limit), "show_value": cleaned, "value": value}
            raise ValidationError(self.message, code=self.code, params=params)


@deconstructible(path="memory.models.LocalizedMinValueValidator")
class LocalizedMinValueValidator(_LimitSaid, validators.MinValueValidator):
    pass


@deconstructible(path="memory.models.LocalizedMaxValueValidator")
class LocalizedMaxValueValidator(_LimitSaid, validators.MaxValueValidator):
    pass
