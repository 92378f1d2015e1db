"""Obsidian notes: a vault folder (the embedded default) or the Local REST API plugin.

The providers (memory.stores.notes_vault.VaultFolderProvider and
memory.stores.notes_rest_api.LocalRestApiProvider) speak one protocol: ``read(path) -> Note`` and
``find_tagged(tag) -> list[Note]``. Errors are domain errors only:
``StoreUnavailable`` when the whole source is out (down, 401, timeout, TLS
refused), ``NoteNotFound`` / ``UnsafeNotePath`` for one note. Callers that
must never block (the pre-hook) catch them; see memory.services.notes.

Tags follow Obsidian's rules closely enough for context notes: an inline
``#tag`` preceded by whitespace (so headings, URL fragments and ``a#b`` are
not tags), outside code blocks, inline code and comments, plus ``tags:`` in
the YAML front matter (a list, a ``[a, b]`` flow list, or a string). Matching
is case-insensitive and nested tags count for their parent: ``#makilab/projet``
is a ``makilab`` note. A YAML comment (``# ...`` at a line's start or after a
space, outside quotes) is not read: ``tags: projet # pas makilab`` is ``projet``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from django.conf import settings

from memory.exceptions import UnsafeNotePath
from memory.models.rules import invisible_in

logger = logging.getLogger(__name__)

NoteSource = Literal["fixed", "tag"]

NOTE_SUFFIX = ".md"
EXCERPT_CHARS = 500
# Cut at the last space only when that keeps most of the excerpt; a 500-char
# "word" (a URL, a base64 blob) is cut hard instead of shrinking to nothing.
EXCERPT_MIN_CHARS = 350
ELLIPSIS = "…"
MAX_PATH_CHARS = 500
# A file or folder name: the limit of ext4, APFS, NTFS (in bytes or close to it).
MAX_NAME_BYTES = 255
# A context note is a few paragraphs; a huge file is read only this far.
MAX_NOTE_BYTES = 1024 * 1024

MSG_PATH_EMPTY = "Le chemin de la note est vide."
MSG_PATH_TOO_LONG = f"Le chemin de la note dépasse {MAX_PATH_CHARS} caractères."
MSG_PATH_ABSOLUTE = "Le chemin de la note doit être relatif au coffre Obsidian."
MSG_PATH_PARENT = "Le chemin de la note ne peut pas remonter hors du coffre (« .. »)."
MSG_PATH_CHARS = "Le chemin de la note contient un caractère interdit."
MSG_PATH_INVISIBLE = (
    "Le chemin de la note contient un caractère invisible ({code}) : il désignerait une "
    "autre note que celle qu'il montre."
)
MSG_PATH_NAME_TOO_LONG = (
    f"Un nom de dossier ou de note dépasse {MAX_NAME_BYTES} octets, "
    "la limite des systèmes de fichiers."
)
MSG_PATH_OUTSIDE = "Ce chemin mène hors du coffre Obsidian (lien symbolique)."
MSG_NOT_FOUND = "Note introuvable : {path}"
MSG_UNREADABLE = "Note illisible : {path} ({reason})"
MSG_VAULT_MISSING = "Le coffre Obsidian est introuvable : {root}"
MSG_UNREACHABLE = "Obsidian est injoignable ({detail})."
MSG_TIMEOUT = "Obsidian ne répond pas (délai de {seconds:g} s dépassé)."
MSG_UNAUTHORIZED = "Clé API Obsidian refusée (HTTP {status})."
MSG_TLS_REFUSED = (
    "Certificat TLS d'Obsidian refusé : indiquez le certificat du plugin dans OBSIDIAN_CA_CERT."
)
MSG_CA_UNREADABLE = "Certificat OBSIDIAN_CA_CERT illisible : {path}"
MSG_HTTP_ERROR = "Obsidian a répondu HTTP {status}."
MSG_BAD_RESPONSE = "Réponse illisible de l'API Obsidian."


@dataclass(frozen=True)
class Note:
    path: str
    # The full text, front matter stripped.
    content: str
    # About EXCERPT_CHARS characters, cut at a word boundary.
    excerpt: str
    source: NoteSource = "fixed"
    # (mtime_ns, size) of the file read, from a vault folder; None otherwise, or when
    # it cannot be trusted (see VaultFolderProvider.note_stamps).
    stamp: tuple[int, int] | None = field(default=None, compare=False)


class NotesProvider(Protocol):
    def read(self, path: str) -> Note: ...

    def find_tagged(self, tag: str, *, limit: int | None = None) -> list[Note]: ...


# --- Text: front matter, excerpt, tags -----------------------------------------

_FRONT_MATTER = re.compile(
    r"\A\ufeff?---[ \t]*\r?\n(?P<yaml>.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)",
    re.DOTALL | re.MULTILINE,
)
# A top-level `tags:` (or the older `tag:`) key of the front matter.
_FRONT_MATTER_TAGS_KEY = re.compile(r"^(?:tags|tag)[ \t]*:[ \t]*(?P<value>.*)$", re.IGNORECASE)
_FRONT_MATTER_ITEM = re.compile(r"^[ \t]*-[ \t]*(?P<value>.*)$")
_TAG_SPLIT = re.compile(r"[,\s]+")
# Where a YAML comment may start ("#" after these) and a quoted scalar may open.
_YAML_COMMENT_AFTER = " \t"
_YAML_QUOTE_AFTER = " \t[{,:-"
# Obsidian: letters, digits, "_", "-" and "/" for nesting; not only digits.
_TAG_BODY = re.compile(r"[\w/-]+")
_INLINE_TAG = re.compile(r"(?<!\S)#(?P<tag>[\w/-]+)")
# A fenced code block closes with the same fence character, at least as long,
# or runs to the end of the note.
_FENCED_BLOCK = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,}).*?$.*?(?:^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)
_INLINE_CODE = re.compile(r"(`+)[^\n]+?\1")
_COMMENTS = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter YAML or None, the rest). A front matter must be closed."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text.removeprefix("\ufeff")
    return match["yaml"], text[match.end() :]


def excerpt_cut(content: str, limit: int = EXCERPT_CHARS) -> str:
    """The first ~limit characters, cut at a word boundary, with an ellipsis if cut."""
    text = content.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    head = head[:cut] if cut >= EXCERPT_MIN_CHARS else text[:limit]
    return head.rstrip() + ELLIPSIS


def _clean_tag(raw: str) -> str | None:
    tag = raw.strip().strip("\"'").strip().removeprefix("#").strip("/")
    if not tag or not _TAG_BODY.fullmatch(tag) or tag.replace("/", "").isdigit():
        return None
    return tag.casefold()


def _yaml_comment_strip(line: str) -> str:
    """The line without its YAML comment: a "#" at its start or after a space or tab,
    outside a quoted scalar ('#makilab' and "#makilab" stay)."""
    if "#" not in line:
        return line
    quote = ""
    for index, char in enumerate(line):
        before = line[index - 1] if index else " "
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"" and before in _YAML_QUOTE_AFTER:
            quote = char
        elif char == "#" and before in _YAML_COMMENT_AFTER:
            return line[:index]
    return line


def _front_matter_tags(yaml: str) -> set[str]:
    raw_items: list[str] = []
    lines = [_yaml_comment_strip(line) for line in yaml.splitlines()]
    index = 0
    while index < len(lines):
        match = _FRONT_MATTER_TAGS_KEY.match(lines[index])
        index += 1
        if match is None:
            continue
        value = match["value"].strip()
        if value.startswith("["):
            # A flow list, possibly over several lines: read up to its "]".
            while "]" not in value and index < len(lines):
                value += " " + lines[index].strip()
                index += 1
            raw_items.extend(value.strip("[]").split(","))
        elif value:
            raw_items.append(value)
        else:
            # A block list: the "- item" lines that follow.
            while index < len(lines):
                line = lines[index]
                item = _FRONT_MATTER_ITEM.match(line)
                if item is not None:
                    raw_items.append(item["value"])
                elif line.strip():  # comments are gone: another key
                    break
                index += 1
    tags: set[str] = set()
    for raw in raw_items:
        # Obsidian reads "tags: a, b" and "tags: a b" as two tags.
        for piece in _TAG_SPLIT.split(raw.strip().strip("\"'")):
            tag = _clean_tag(piece)
            if tag:
                tags.add(tag)
    return tags


def _body_tags(body: str) -> set[str]:
    if "#" not in body:
        return set()
    # Whole-text passes (not line by line): scanning a vault parses every note.
    text = body
    if "```" in text or "~~~" in text:
        text = _FENCED_BLOCK.sub("\n", text)
    if "%%" in text or "<!--" in text:
        text = _COMMENTS.sub(" ", text)
    if "`" in text:
        text = _INLINE_CODE.sub(" ", text)
    tags: set[str] = set()
    for raw in set(_INLINE_TAG.findall(text)):
        tag = _clean_tag(raw)
        if tag:
            tags.add(tag)
    return tags


def note_tags(text: str) -> set[str]:
    """Every tag of a note's raw text, case-folded, without '#'."""
    yaml, body = split_front_matter(text)
    tags = _body_tags(body)
    if yaml:
        tags |= _front_matter_tags(yaml)
    return tags


def tag_normalize(tag: str) -> str:
    """The tag as matched: without a leading '#' or slashes, case-folded."""
    return tag.strip().removeprefix("#").strip("/").casefold()


def tag_matches(note_tag: str, wanted: str) -> bool:
    """#makilab/projet counts for makilab (nested tags belong to their parent)."""
    note_tag = note_tag.casefold()
    return note_tag == wanted or note_tag.startswith(wanted + "/")


# Control characters (C0 but tab and line breaks, DEL, C1): a note is the owner's file, and
# a NUL or \x01 in it reached /memory's HTML raw (the prompt block drops them anyway).
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def note_build(
    *, path: str, text: str, source: NoteSource, stamp: tuple[int, int] | None = None
) -> Note:
    _, body = split_front_matter(text)
    content = _CONTROLS.sub("", body).strip()
    return Note(
        path=path, content=content, excerpt=excerpt_cut(content), source=source, stamp=stamp
    )


# --- Paths -----------------------------------------------------------------------


def note_path_normalize(path: str) -> str:
    """A safe vault-relative POSIX path ending in .md, or UnsafeNotePath.

    "Profil" becomes "Profil.md" (Obsidian links omit the suffix); "./a//b.md"
    becomes "a/b.md". Absolute paths, drive letters, ".." and a name longer than
    the file systems allow are refused here; symlinks leaving the vault are refused
    by the folder provider, which can see the disk.
    """
    raw = unicodedata.normalize("NFC", (path or "").strip()).replace("\\", "/")
    if not raw:
        raise UnsafeNotePath(MSG_PATH_EMPTY)
    if len(raw) > MAX_PATH_CHARS:
        raise UnsafeNotePath(MSG_PATH_TOO_LONG)
    if any(ord(char) < 32 for char in raw):
        raise UnsafeNotePath(MSG_PATH_CHARS)
    if (code := invisible_in(raw)) is not None:
        # QA: « a.md\u200f » was kept as « a.md\u200f.md », a note that looks like « a.md ».
        raise UnsafeNotePath(MSG_PATH_INVISIBLE.format(code=code))
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise UnsafeNotePath(MSG_PATH_ABSOLUTE)
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if any(part == ".." for part in parts):
        raise UnsafeNotePath(MSG_PATH_PARENT)
    if not parts:
        raise UnsafeNotePath(MSG_PATH_EMPTY)
    if not parts[-1].lower().endswith(NOTE_SUFFIX):
        parts[-1] += NOTE_SUFFIX
    normalized = "/".join(parts)
    if len(normalized) > MAX_PATH_CHARS:  # the suffix added may pass the limit
        raise UnsafeNotePath(MSG_PATH_TOO_LONG)
    if any(len(part.encode()) > MAX_NAME_BYTES for part in parts):
        raise UnsafeNotePath(MSG_PATH_NAME_TOO_LONG)
    return normalized


# --- Factory ---------------------------------------------------------------------

_providers: dict[tuple, NotesProvider] = {}
_providers_lock = threading.Lock()


def notes_source_key() -> tuple:
    """What identifies the configured source; the API key only as a digest."""
    if settings.OBSIDIAN_API_URL:
        return (
            "api",
            settings.OBSIDIAN_API_URL,
            hashlib.sha256(settings.OBSIDIAN_API_KEY.encode()).hexdigest()[:16],
            settings.OBSIDIAN_CA_CERT or None,
            bool(settings.OBSIDIAN_TLS_VERIFY),
            float(settings.OBSIDIAN_TIMEOUT_S),
        )
    return ("folder", str(settings.OBSIDIAN_VAULT_PATH))


def _provider_build() -> NotesProvider:
    from memory.stores.notes_rest_api import LocalRestApiProvider
    from memory.stores.notes_vault import VaultFolderProvider

    if settings.OBSIDIAN_API_URL:
        if not settings.OBSIDIAN_API_KEY:
            logger.warning("OBSIDIAN_API_URL is set without OBSIDIAN_API_KEY: expect HTTP 401.")
        return LocalRestApiProvider(
            settings.OBSIDIAN_API_URL,
            settings.OBSIDIAN_API_KEY,
            ca_cert=settings.OBSIDIAN_CA_CERT or None,
            verify=settings.OBSIDIAN_TLS_VERIFY,
            timeout=settings.OBSIDIAN_TIMEOUT_S,
        )
    root = Path(settings.OBSIDIAN_VAULT_PATH)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        # Reads will report the missing vault; building must not fail.
        logger.warning("Cannot create the Obsidian vault folder %s: %s", root, exc)
    return VaultFolderProvider(root)


def get_notes_provider() -> NotesProvider:
    """The provider the settings describe, built once per configuration.

    Reusing it keeps the HTTPS connection (and the TLS context, slow to load)
    and the folder's tag index warm between calls.
    """
    key = notes_source_key()
    with _providers_lock:
        provider = _providers.get(key)
        if provider is None:
            provider = _provider_build()
            for old in _providers.values():
                close = getattr(old, "close", None)  # the REST API's HTTPS connection
                if close is not None:
                    close()
            _providers.clear()
            _providers[key] = provider
    return provider
