"""Obsidian context notes: what the pre-hook injects, and the settings behind it.

`context_notes_get` never raises: a note that is missing or refused is
skipped and named in `failures`; a source that is down (unreachable, 401,
timeout, TLS refused) stops the collection at once, so one hung server costs
one timeout, not one per note. Results are kept in a short in-process cache
whose key holds the settings (fixed paths, tag, enabled flag, source), so any
change of them is seen on the next call; a vault folder's result also holds
the folder's change marker, so a note that appears (or leaves) is seen at once.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from memory.exceptions import MemoryServiceError, StoreUnavailable
from memory.models import MemorySettings
from memory.stores.notes import Note, get_notes_provider, note_path_normalize, notes_source_key

logger = logging.getLogger(__name__)

MAX_FIXED_NOTES = 20
# Tagged notes injected at most (after the fixed ones): ~500 chars each.
MAX_TAGGED_NOTES = 20
TAG_MAX_CHARS = 100
# Letters, digits, "_" and "-", nested with single slashes: makilab/projet-2.
_TAG_RE = re.compile(r"[\w-]+(?:/[\w-]+)*")

FAILURE_SOURCE = "source"
FAILURE_TAG = "tag"

MSG_TOO_MANY_NOTES = f"Pas plus de {MAX_FIXED_NOTES} notes de contexte fixes."
MSG_TAG_EMPTY = "Le tag ne peut pas être vide."
MSG_TAG_INVALID = (
    "Tag invalide : lettres, chiffres, « - », « _ » et « / » pour un sous-tag (sans « # »)."
)
MSG_TAG_DIGITS = "Un tag Obsidian ne peut pas être composé uniquement de chiffres."
MSG_TAG_TOO_LONG = f"Le tag dépasse {TAG_MAX_CHARS} caractères."
MSG_UNEXPECTED = "Erreur inattendue en lisant les notes Obsidian."


@dataclass(frozen=True)
class NotesResult:
    # Fixed notes first (in the settings' order), then tagged notes by path.
    notes: list[Note] = field(default_factory=list)
    # A fixed path, "tag" or "source" -> a short French reason.
    failures: dict[str, str] = field(default_factory=dict)


# key -> (expiry, the source's change marker when collected, result)
_cache: dict[tuple, tuple[float, tuple | None, NotesResult]] = {}
_cache_lock = threading.Lock()


def notes_cache_clear() -> None:
    with _cache_lock:
        _cache.clear()


def _copy(result: NotesResult) -> NotesResult:
    # Callers may append to the lists; the cached value must not change.
    return NotesResult(notes=list(result.notes), failures=dict(result.failures))


def _path_key(path: str) -> str:
    return unicodedata.normalize("NFC", path)


def _change_marker() -> tuple | None:
    """The vault folder's change marker (None for the API: its cache only expires)."""
    try:
        provider = get_notes_provider()
    except StoreUnavailable:
        return None
    marker = getattr(provider, "change_marker", None)
    return marker() if marker is not None else None


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
            if _path_key(note.path) not in seen:
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
        marker = _change_marker() if ttl else None
        if use_cache and ttl:
            with _cache_lock:
                hit = _cache.get(key)
            if hit is not None and hit[0] > time.monotonic() and hit[1] == marker:
                return _copy(hit[2])
        result = _notes_collect(paths=paths, tag=tag)
        if ttl:
            with _cache_lock:
                # One configuration at a time: an older key can never be hit again.
                _cache.clear()
                _cache[key] = (time.monotonic() + ttl, marker, result)
        for name, reason in result.failures.items():
            logger.warning("Obsidian context notes: %s skipped: %s", name, reason)
        return _copy(result)
    except Exception:
        logger.exception("Obsidian context notes failed")
        return NotesResult(failures={FAILURE_SOURCE: MSG_UNEXPECTED})


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


def _settings_save(memory_settings: MemorySettings, *fields: str) -> MemorySettings:
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
        return _settings_save(memory_settings, "obsidian_context_notes")


def context_notes_set(*, paths: list[str]) -> MemorySettings:
    """Replace the fixed notes (PATCH of the settings): normalized, repeats dropped, order kept."""
    cleaned: list[str] = []
    for path in paths:
        try:
            rel = note_path_normalize(str(path))
        except MemoryServiceError as exc:
            raise ValidationError({"obsidian_context_notes": f"{path} : {exc}"}) from None
        if rel not in cleaned:
            cleaned.append(rel)
    if len(cleaned) > MAX_FIXED_NOTES:
        raise ValidationError({"obsidian_context_notes": MSG_TOO_MANY_NOTES})
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
