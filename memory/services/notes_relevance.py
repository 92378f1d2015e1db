"""What of the context notes a message is about: the passage of a long note it asks for,
and the notes a message the relevance gate stopped still receives.

A context note used to inject its first ~500 characters whatever the message: the
owner's answer further down (« Le code du portail du garage est 4417B », after a
page about the house) reached the prompt for no question. A note longer than its
excerpt is cut into passages (its paragraphs, a heading kept with the text under
it, a long paragraph cut at its sentences); the passage sharing the most of the
message's strong words is injected instead of the head when it shares more than
the head does (ties keep the head, the note's own introduction).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from memory.services.formatting import NOTE_MAX_CHARS, clean_text
from memory.services.keywords import STOP_WORDS
from memory.services.relevance import SMALL_TALK, without_phrases
from memory.stores.fts import fold
from memory.stores.notes import EXCERPT_CHARS

# A context note a gated message is about shares this many of its strong words: folded
# words of at least NOTE_WORD_MIN_CHARS letters, no number, no stop word, small talk or
# word of time (NOTE_WEAK_WORDS), not the context tag (every tagged note holds it).
# Measured: one shared word let « Tu fais quoi ce soir ? » bring a note about Tuesday
# evenings, numbers a note dated « le 12 mars à 7 heures » to « Combien font 12 fois 7 ? ».
NOTE_SHARED_WORDS = 2
NOTE_WORD_MIN_CHARS = 4
_LETTERS = re.compile(r"[^\W\d_]+")

# Words of time a chat is full of: they tell when, not what a note is about (« Tu
# préfères le matin ou le soir ? » and a note « Mardi soir : escalade. Jeudi matin… »).
_WEEKDAYS = "lundi mardi mercredi jeudi vendredi samedi dimanche"
_TIMES = "matin matinee soir soiree nuit midi journee semaine weekend demain hier aujourd"
_TIMES_EN = "morning evening night tonight today tomorrow yesterday week weekend"
NOTE_WEAK_WORDS = frozenset(f"{_WEEKDAYS} {_TIMES} {_TIMES_EN}".split())

# A passage is at most an excerpt long; a longer paragraph is cut at a sentence's (or a
# line's) end past this many characters, else at a space, else where it must.
PASSAGE_CHARS = EXCERPT_CHARS
PASSAGE_MIN_CHARS = 200
# A heading this short, alone in its paragraph, goes with the paragraph under it.
HEADING_MAX_CHARS = 120
PASSAGE_MARK = "… "
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")
_COMMENTS = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)
_SENTENCE_ENDS = re.compile(r"(?<=[.!?…])\s|\n")


def strong_words(text: str) -> frozenset[str]:
    """The words of ``text`` that can name what a note is about (see NOTE_SHARED_WORDS):
    every one of them, not the first few (keyword_terms keeps twelve)."""
    return frozenset(
        word
        for word in _LETTERS.findall(fold(text))
        if len(word) >= NOTE_WORD_MIN_CHARS
        and word not in STOP_WORDS
        and word not in SMALL_TALK
        and word not in NOTE_WEAK_WORDS
    )


def message_words(text: str, *, tag: str = "") -> frozenset[str]:
    """A message's strong words, a goodbye's phrases out, and not the context tag's (cut
    as the text is: « #vie-perso » holds « perso »)."""
    if not text:
        return frozenset()
    return strong_words(without_phrases(text)) - strong_words(tag)


def note_injected_text(note: Any, words: frozenset[str] = frozenset()) -> str:
    """What the block injects of an Obsidian note (a Note) for a message of ``words``
    (message_words, read once per message): its excerpt, or the passage the message is
    about (note_passage), made safe for one prompt line. What the gate's notes read too."""
    passage = note_passage(note, words)
    if passage is None:
        return clean_text(note.excerpt, max_chars=NOTE_MAX_CHARS)
    return clean_text(PASSAGE_MARK + passage, max_chars=NOTE_MAX_CHARS)


def note_passage(note: Any, words: frozenset[str]) -> str | None:
    """The passage of ``note`` sharing more of ``words`` than its excerpt does, and at
    least NOTE_SHARED_WORDS of them (the first such one of the most), None when the
    excerpt is the whole note or no passage does. One word is not enough: review saw
    « relire mon code Python » swap a house's description for its gate code's paragraph."""
    if len(words) < NOTE_SHARED_WORDS or len(note.content.strip()) <= EXCERPT_CHARS:
        return None  # (the excerpt is the whole note)
    best, shared = None, max(len(words & _words_cached(note.excerpt)), NOTE_SHARED_WORDS - 1)
    for passage, passage_words in _passages(note.content):
        if len(words & passage_words) > shared:
            best, shared = passage, len(words & passage_words)
    return best


@functools.lru_cache(maxsize=256)
def _words_cached(text: str) -> frozenset[str]:
    """A note's strong words: the context notes are few and read again every call (a
    message is read once, uncached: it may be long)."""
    return strong_words(text)


@functools.lru_cache(maxsize=32)
def _passages(content: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """``content`` cut into passages of at most PASSAGE_CHARS, each with its strong words:
    its paragraphs, a short heading alone in its own with the next one, a long one cut
    at its sentences. Kept per text: the notes are read again every call."""
    paragraphs: list[str] = []
    heading = ""
    # Obsidian's comments (%% … %%, <!-- … -->) are hidden in the note as the owner
    # reads it: never injected from past the head either.
    content = _COMMENTS.sub(" ", content)
    for paragraph in (p.strip() for p in _PARAGRAPHS.split(content)):
        if not paragraph:
            continue
        if heading:
            paragraph, heading = f"{heading}\n{paragraph}", ""
        if (
            paragraph.startswith("#")
            and "\n" not in paragraph
            and len(paragraph) <= HEADING_MAX_CHARS
        ):
            heading = paragraph
            continue
        paragraphs.append(paragraph)
    if heading:
        paragraphs.append(heading)
    passages = [piece for paragraph in paragraphs for piece in _cut(paragraph)]
    return tuple((passage, strong_words(passage)) for passage in passages)


def _cut(paragraph: str) -> list[str]:
    """``paragraph`` in pieces of at most PASSAGE_CHARS (see PASSAGE_MIN_CHARS)."""
    pieces = []
    while len(paragraph) > PASSAGE_CHARS:
        head = paragraph[: PASSAGE_CHARS + 1]
        ends = [m.end() for m in _SENTENCE_ENDS.finditer(head) if m.end() >= PASSAGE_MIN_CHARS]
        cut = ends[-1] if ends else head.rfind(" ")
        if cut < PASSAGE_MIN_CHARS:
            cut = PASSAGE_CHARS
        pieces.append(paragraph[:cut].strip())
        paragraph = paragraph[cut:].strip()
    if paragraph:
        pieces.append(paragraph)
    return pieces


def notes_about(notes: Any, text: str, *, tag: str = "") -> Any:
    """Of ``notes`` (a NotesResult), the notes ``text`` is about, for a message the gate
    kept the memories from: the gate reads the memories' evidence, and a question about a
    note alone (« Sur quelle machine tourne le projet Zéphyrin ? ») lost its note with
    them. The note is read as the block injects it for this message (note_injected_text).
    None when no note is left (its failures stay reported apart)."""
    if notes is None or not notes.notes:
        return None
    words = message_words(text, tag=tag)
    if len(words) < NOTE_SHARED_WORDS:
        return None
    kept = [
        n
        for n in notes.notes
        if len(words & _words_cached(note_injected_text(n, words))) >= NOTE_SHARED_WORDS
    ]
    return dataclasses.replace(notes, notes=kept) if kept else None
