"""Obsidian context notes: what the pre-hook injects, and the settings behind it.

`context_notes_get` never raises: a note that is missing or refused is
skipped and named in `failures`; a source that is down (unreachable, 401,
timeout, TLS refused) stops the collection at once, so one hung server costs
one timeout, not one per note. Results are kept in a short in-process cache
whose key holds the settings (fixed paths, tag, enabled flag, source), so any
change of them is seen on the next call; a vault folder's result also holds
the folder's change marker, so a note that appears (or leaves) is seen at once,
and the stamps (mtime, size) of the notes it used and of the fixed paths, so a
note saved in place (which leaves its folder as it was) is read again at once.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from typing import NamedTuple

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from memory.exceptions import MemoryServiceError, StoreUnavailable
from memory.models import MemorySettings

# The settings' rule; memory.services.settings imports them from here too.
from memory.models.settings import MAX_FIXED_NOTES, MSG_TOO_MANY_NOTES
from memory.stores.notes import (
    Note,
    NotesProvider,
    get_notes_provider,
    note_path_normalize,
    notes_source_key,
)

logger = logging.getLogger(__name__)

# Tagged notes injected at most (after the fixed ones): ~500 chars each.
MAX_TAGGED_NOTES = 20
TAG_MAX_CHARS = 100
# Letters, digits, "_" and "-", nested with single slashes: makilab/projet-2.
_TAG_RE = re.compile(r"[\w-]+(?:/[\w-]+)*")

FAILURE_SOURCE = "source"
FAILURE_TAG = "tag"

MSG_TAG_EMPTY = "Le tag ne peut pas être vide."
MSG_TAG_INVALID = (
    "Tag invalide : lettres, chiffres, « - », « _ » et « / » pour un sous-tag (sans « # »)."
)
MSG_TAG_DIGITS = "Un tag Obsidian ne peut pas être composé uniquement de chiffres."
MSG_TAG_TOO_LONG = f"Le tag dépasse {TAG_MAX_CHARS} caractères."
MSG_UNEXPECTED = "Erreur inattendue en lisant les notes Obsidian."
MSG_NOTE_EMPTY = "Note vide : {path}"


@dataclass(frozen=True)
class NotesResult:
    # Fixed notes first (in the settings' order), then tagged notes by path.
    notes: list[Note] = field(default_factory=list)
    # A fixed path, "tag" or "source" -> a short French reason.
    failures: dict[str, str] = field(default_factory=dict)


class _Cached(NamedTuple):
    expiry: float  # time.monotonic()
    # The vault folder's change marker and note stamps taken before collecting
    # (None for the API: its cache only expires).
    marker: tuple | None
    stamps: dict[str, tuple[int, int] | None] | None
    result: NotesResult


# One entry: key -> what was collected with these settings.
_cache: dict[tuple, _Cached] = {}
_cache_lock = threading.Lock()


def notes_cache_clear() -> None:
    with _cache_lock:
        _cache.clear()


def _copy(result: NotesResult) -> NotesResult:
    # Callers may append to the lists; the cached value must not change.
    return NotesResult(notes=list(result.notes), failures=dict(result.failures))


def _path_key(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def _provider_or_none() -> NotesProvider | None:
    try:
        return get_notes_provider()
    except StoreUnavailable:
        return None


def _change_marker(provider: NotesProvider | None) -> tuple | None:
    """The vault folder's change marker (None for the API: its cache only expires)."""
    marker = getattr(provider, "change_marker", None)
    return marker() if marker is not None else None


def _fixed_stamps(provider: NotesProvider | None, paths: tuple[str, ...]) -> dict | None:
    """The vault folder's stamps of the fixed paths, taken before reading them: an edit
    in place, or a note appearing in a hidden folder the marker does not walk."""
    note_stamps = getattr(provider, "note_stamps", None)
    if note_stamps is None:
        return None
    rels = []
    for path in paths:
        with contextlib.suppress(MemoryServiceError):  # refused: named in failures
            rels.append(note_path_normalize(path))
    return note_stamps(rels)


def _result_stamps(fixed: dict | None, result: NotesResult) -> dict | None:
    """The fixed paths' stamps and those the tagged notes had when read."""
    if fixed is None:
        return None
    tagged = {note.path: note.stamp for note in result.notes if note.source == "tag"}
    return {**tagged, **fixed}


def _stamps_current(provider: NotesProvider | None, stamps: dict | None) -> bool:
    """Whether every note a cached result used is as it was (None, too recent to be
    trusted, never is). At most MAX_FIXED_NOTES + MAX_TAGGED_NOTES stats."""
    if stamps is None:
        return True
    note_stamps = getattr(provider, "note_stamps", None)
    if note_stamps is None:
        return False
    now = note_stamps(stamps)
    return all(stamp is not None and now[path] == stamp for path, stamp in stamps.items())


def _notes_collect(*, paths: tuple[str, ...], tag: str) -> NotesResult:
    notes: list[Note] = []
    failures: dict[str, str] = {}
    seen: set[str] = set()
    try:
        provider = get_notes_provider()
    except StoreUnavailable as exc:
        return NotesResult(notes=notes, failures={FAILURE_SOURCE: str(exc)})

    for path in paths:
        try:
            note = provider.read(path)
        except StoreUnavailable as exc:
            failures[FAILURE_SOURCE] = str(exc)
            return NotesResult(notes=notes, failures=failures)
        except MemoryServiceError as exc:  # NoteNotFound, UnsafeNotePath
            failures[path] = str(exc)
            continue
        if not note.content:  # nothing to inject: an empty line would say nothing
            failures[path] = MSG_NOTE_EMPTY.format(path=note.path)
            continue
        if _path_key(note.path) not in seen:
            seen.add(_path_key(note.path))
            notes.append(note)

    if tag:
        try:
            # Ask for enough to still have MAX_TAGGED_NOTES after removing the fixed ones.
            tagged = provider.find_tagged(tag, limit=MAX_TAGGED_NOTES + len(seen))
        except StoreUnavailable as exc:
            failures[FAILURE_SOURCE] = str(exc)
            tagged = []
        except MemoryServiceError as exc:
            failures[FAILURE_TAG] = str(exc)
            tagged = []
        added = 0
        for note in tagged:
            if added >= MAX_TAGGED_NOTES:
                break
            if note.content and _path_key(note.path) not in seen:
                seen.add(_path_key(note.path))
                notes.append(note)
                added += 1
    return NotesResult(notes=notes, failures=failures)


def context_notes_get(
    *, use_cache: bool = True, memory_settings: MemorySettings | None = None
) -> NotesResult:
    """The context notes to inject: fixed paths, then notes tagged #<tag>. Never raises.

    ``memory_settings`` lets a caller that already read the row (the retrieval,
    which runs this in a worker thread) spare a database query.
    """
    try:
        memory_settings = memory_settings or MemorySettings.load()
        enabled = memory_settings.obsidian_context_enabled
        paths = tuple(str(path) for path in memory_settings.obsidian_context_notes or ())
        tag = (memory_settings.obsidian_context_tag or "").strip()
        if not enabled:
            return NotesResult()
        key = (notes_source_key(), paths, tag, enabled)
        ttl = settings.OBSIDIAN_CACHE_SECONDS or 0
        if not ttl:
            return _notes_logged(_notes_collect(paths=paths, tag=tag))
        provider = _provider_or_none()
        marker = _change_marker(provider)
        if use_cache:
            with _cache_lock:
                hit = _cache.get(key)
            if _cache_fresh(hit, provider, marker):
                return _copy(hit.result)
        fixed = _fixed_stamps(provider, paths)
        result = _notes_collect(paths=paths, tag=tag)
        with _cache_lock:
            # One configuration at a time: an older key can never be hit again.
            _cache.clear()
            _cache[key] = _Cached(
                time.monotonic() + ttl, marker, _result_stamps(fixed, result), result
            )
        return _notes_logged(result)
    except Exception:
        logger.exception("Obsidian context notes failed")
        return NotesResult(failures={FAILURE_SOURCE: MSG_UNEXPECTED})


def _cache_fresh(hit: _Cached | None, provider: NotesProvider | None, marker: tuple | None) -> bool:
    """Unexpired, same marker (no note appeared or left), same stamps (none saved)."""
    return (
        hit is not None
        and hit.expiry > time.monotonic()
        and hit.marker == marker
        and _stamps_current(provider, hit.stamps)
    )


def _notes_logged(result: NotesResult) -> NotesResult:
    for name, reason in result.failures.items():
        logger.warning("Obsidian context notes: %s skipped: %s", name, reason)
    return _copy(result)


@dataclass(frozen=True)
class NotesSource:
    """Where notes are read from, as the owner reads it: "le dossier /…" or "l'API Obsidian https://…"."""

    label: str
    location: str

    def __str__(self) -> str:
        return f"{self.label} {self.location}"


def notes_source_get() -> NotesSource:
    if settings.OBSIDIAN_API_URL:
        return NotesSource("l'API Obsidian", settings.OBSIDIAN_API_URL)
    return NotesSource("le dossier", str(settings.OBSIDIAN_VAULT_PATH))


def notes_source_prepare() -> NotesSource:
    """At start: open the source (a vault folder is created if missing) and say where it is."""
    get_notes_provider()
    return notes_source_get()


def note_preview(*, path: str) -> Note:
    """One note, full text, for the dashboard. Raises NoteNotFound, UnsafeNotePath, StoreUnavailable."""
    return get_notes_provider().read(path)


def _settings_save(
    memory_settings: MemorySettings, *fields: str, validate: bool = True
) -> MemorySettings:
    if validate:
        memory_settings.full_clean()
    memory_settings.save(update_fields=[*fields, "updated_at"])
    return memory_settings


def context_note_add(*, path: str) -> MemorySettings:
    """Add a fixed context note ("Profil" is stored as "Profil.md"). Adding it twice is a no-op."""
    rel = note_path_normalize(path)
    with transaction.atomic():
        memory_settings = MemorySettings.load()
        current = list(memory_settings.obsidian_context_notes or [])
        if rel in current:
            return memory_settings
        if len(current) >= MAX_FIXED_NOTES:
            raise MemoryServiceError(MSG_TOO_MANY_NOTES)
        memory_settings.obsidian_context_notes = [*current, rel]
        return _settings_save(memory_settings, "obsidian_context_notes")


def context_note_remove(*, path: str) -> MemorySettings:
    """Remove a fixed context note; removing one that is not there is a no-op."""
    raw = (path or "").strip()
    candidates = {raw}
    # A bad path stored by hand (admin) must still be removable as typed.
    with contextlib.suppress(MemoryServiceError):
        candidates.add(note_path_normalize(raw))
    with transaction.atomic():
        memory_settings = MemorySettings.load()
        current = list(memory_settings.obsidian_context_notes or [])
        kept = [item for item in current if item not in candidates]
        if kept == current:
            return memory_settings
        memory_settings.obsidian_context_notes = kept
        # A removal never makes the list worse: a bad path stored before the rule
        # existed (or by hand) must not block removing it or any other.
        return _settings_save(memory_settings, "obsidian_context_notes", validate=False)


def _normalized_or_as_typed(path: str) -> str:
    try:
        return note_path_normalize(path)
    except MemoryServiceError:
        return path  # the model's validator refuses it, naming it


def context_notes_set(*, paths: list[str]) -> MemorySettings:
    """Replace the fixed notes (PATCH of the settings): normalized, repeats dropped, order kept.

    Raises ValidationError (the model's validator) naming each refused path, or for too many.
    """
    cleaned = list(dict.fromkeys(_normalized_or_as_typed(str(path)) for path in paths))
    with transaction.atomic():
        memory_settings = MemorySettings.load()
        if memory_settings.obsidian_context_notes == cleaned:
            return memory_settings
        memory_settings.obsidian_context_notes = cleaned
        return _settings_save(memory_settings, "obsidian_context_notes")


def context_tag_clean(tag: str) -> str:
    """The tag as stored: one leading '#' dropped, checked, case kept."""
    value = (tag or "").strip().removeprefix("#").strip()
    if not value:
        raise ValidationError({"obsidian_context_tag": MSG_TAG_EMPTY})
    if len(value) > TAG_MAX_CHARS:
        raise ValidationError({"obsidian_context_tag": MSG_TAG_TOO_LONG})
    if not _TAG_RE.fullmatch(value):
        raise ValidationError({"obsidian_context_tag": MSG_TAG_INVALID})
    if value.replace("/", "").isdigit():
        raise ValidationError({"obsidian_context_tag": MSG_TAG_DIGITS})
    return value


def context_tag_set(*, tag: str) -> MemorySettings:
    value = context_tag_clean(tag)
    with transaction.atomic():
        memory_settings = MemorySettings.load()
        if memory_settings.obsidian_context_tag == value:
            return memory_settings
        memory_settings.obsidian_context_tag = value
        return _settings_save(memory_settings, "obsidian_context_tag")
