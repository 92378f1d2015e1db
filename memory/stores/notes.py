"""Obsidian notes: a vault folder (the embedded default) or the Local REST API plugin.

Both providers speak one protocol: ``read(path) -> Note`` and
``find_tagged(tag) -> list[Note]``. Errors are domain errors only:
``StoreUnavailable`` when the whole source is out (down, 401, timeout, TLS
refused), ``NoteNotFound`` / ``UnsafeNotePath`` for one note. Callers that
must never block (the pre-hook) catch them; see memory.services.notes.

Tags follow Obsidian's rules closely enough for context notes: an inline
``#tag`` preceded by whitespace (so headings, URL fragments and ``a#b`` are
not tags), outside code blocks, inline code and comments, plus ``tags:`` in
the YAML front matter (a list, a ``[a, b]`` flow list, or a string). Matching
is case-insensitive and nested tags count for their parent: ``#makilab/projet``
is a ``makilab`` note.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import ssl
import stat
import threading
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import quote

import httpx
from django.conf import settings

from memory.exceptions import NoteNotFound, StoreUnavailable, UnsafeNotePath

logger = logging.getLogger(__name__)

NoteSource = Literal["fixed", "tag"]

NOTE_SUFFIX = ".md"
EXCERPT_CHARS = 500
# Cut at the last space only when that keeps most of the excerpt; a 500-char
# "word" (a URL, a base64 blob) is cut hard instead of shrinking to nothing.
EXCERPT_MIN_CHARS = 350
ELLIPSIS = "…"
MAX_PATH_CHARS = 500
# A context note is a few paragraphs; a huge file is read only this far.
MAX_NOTE_BYTES = 1024 * 1024
# Scanning a vault for tags: files looked at, and files too big to read.
MAX_SCAN_FILES = 2000
MAX_SCAN_BYTES = 512 * 1024

JSONLOGIC_CONTENT_TYPE = "application/vnd.olrapi.jsonlogic+json"

MSG_PATH_EMPTY = "Le chemin de la note est vide."
MSG_PATH_TOO_LONG = f"Le chemin de la note dépasse {MAX_PATH_CHARS} caractères."
MSG_PATH_ABSOLUTE = "Le chemin de la note doit être relatif au coffre Obsidian."
MSG_PATH_PARENT = "Le chemin de la note ne peut pas remonter hors du coffre (« .. »)."
MSG_PATH_CHARS = "Le chemin de la note contient un caractère interdit."
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


def _front_matter_tags(yaml: str) -> set[str]:
    raw_items: list[str] = []
    lines = yaml.splitlines()
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
                elif line.strip() and not line.lstrip().startswith("#"):
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


def note_build(*, path: str, text: str, source: NoteSource) -> Note:
    _, body = split_front_matter(text)
    content = body.strip()
    return Note(path=path, content=content, excerpt=excerpt_cut(content), source=source)


# --- Paths -----------------------------------------------------------------------


def note_path_normalize(path: str) -> str:
    """A safe vault-relative POSIX path ending in .md, or UnsafeNotePath.

    "Profil" becomes "Profil.md" (Obsidian links omit the suffix); "./a//b.md"
    becomes "a/b.md". Absolute paths, drive letters and ".." are refused here;
    symlinks leaving the vault are refused by the folder provider, which can
    see the disk.
    """
    raw = unicodedata.normalize("NFC", (path or "").strip()).replace("\\", "/")
    if not raw:
        raise UnsafeNotePath(MSG_PATH_EMPTY)
    if len(raw) > MAX_PATH_CHARS:
        raise UnsafeNotePath(MSG_PATH_TOO_LONG)
    if any(ord(char) < 32 for char in raw):
        raise UnsafeNotePath(MSG_PATH_CHARS)
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
    return normalized


def _read_limited(file_path: Path, shown_path: str) -> str:
    try:
        with file_path.open("rb") as handle:
            data = handle.read(MAX_NOTE_BYTES)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise NoteNotFound(MSG_NOT_FOUND.format(path=shown_path)) from None
    except OSError as exc:
        raise NoteNotFound(
            MSG_UNREADABLE.format(path=shown_path, reason=exc.strerror or type(exc).__name__)
        ) from None
    return data.decode("utf-8", errors="replace")


# --- Vault folder ------------------------------------------------------------------


class VaultFolderProvider:
    """Notes read straight from a vault folder on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        # rel path -> (mtime_ns, size, tags): a re-scan only reads changed files.
        self._tag_index: dict[str, tuple[int, int, frozenset[str]]] = {}
        self._index_lock = threading.Lock()

    def _real_root(self) -> Path:
        try:
            root = self.root.resolve(strict=True)
        except OSError:
            raise StoreUnavailable(MSG_VAULT_MISSING.format(root=self.root)) from None
        if not root.is_dir():
            raise StoreUnavailable(MSG_VAULT_MISSING.format(root=self.root))
        return root

    def change_marker(self) -> tuple:
        """What changes when a note appears or leaves: the vault's folders and their mtimes.

        A file created, deleted or renamed changes its folder's mtime; listing
        the folders (not the notes) keeps this cheap. The context-notes cache
        holds a result only while the marker is the same, so a note that
        appears is found at once, not after the cache's lifetime.
        """
        marker = []
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
            try:
                mtime = os.stat(dirpath).st_mtime_ns
            except OSError:
                continue
            # The names too: an mtime is coarse (a few ms), a listing is exact.
            marker.append((dirpath, mtime, hash(tuple(sorted(filenames)))))
        return tuple(marker)

    def read(self, path: str) -> Note:
        rel = note_path_normalize(path)
        root = self._real_root()
        real = root.joinpath(*rel.split("/")).resolve()
        if not real.is_relative_to(root):
            raise UnsafeNotePath(MSG_PATH_OUTSIDE)
        return note_build(path=rel, text=_read_limited(real, rel), source="fixed")

    def find_tagged(self, tag: str, *, limit: int | None = None) -> list[Note]:
        wanted = tag_normalize(tag)
        if not wanted:
            return []
        root = self._real_root()
        matches = [
            (rel, real)
            for rel, real, tags in self._scan(root)
            if any(tag_matches(note_tag, wanted) for note_tag in tags)
        ]
        notes: list[Note] = []
        for rel, real in matches:
            if limit is not None and len(notes) >= limit:
                break
            try:
                text = _read_limited(real, rel)
            except NoteNotFound:
                continue  # deleted since the scan
            notes.append(note_build(path=rel, text=text, source="tag"))
        return notes

    def _scan(self, root: Path) -> list[tuple[str, Path, frozenset[str]]]:
        """Every note of the vault with its tags, in path order, within the caps."""
        previous = self._tag_index
        index: dict[str, tuple[int, int, frozenset[str]]] = {}
        found: list[tuple[str, Path, frozenset[str]]] = []
        seen_files = 0
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            # Hidden folders (.obsidian, .trash, .git) hold no context notes.
            dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
            for name in sorted(filenames):
                if name.startswith(".") or not name.lower().endswith(NOTE_SUFFIX):
                    continue
                seen_files += 1
                if seen_files > MAX_SCAN_FILES:
                    logger.warning(
                        "Obsidian vault %s has more than %d notes: the tag scan stopped there.",
                        root,
                        MAX_SCAN_FILES,
                    )
                    self._store_index(index)
                    return found
                entry = self._scan_file(root, Path(dirpath, name), previous, index)
                if entry is not None:
                    found.append(entry)
        self._store_index(index)
        return found

    def _scan_file(
        self,
        root: Path,
        full_path: Path,
        previous: dict[str, tuple[int, int, frozenset[str]]],
        index: dict[str, tuple[int, int, frozenset[str]]],
    ) -> tuple[str, Path, frozenset[str]] | None:
        if full_path.is_symlink():
            real = full_path.resolve()
            if not real.is_relative_to(root):
                logger.info("Skipping %s: a symlink leaving the vault.", full_path)
                return None
        else:
            real = full_path
        try:
            info = real.stat()
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SCAN_BYTES:
            return None
        rel = full_path.relative_to(root).as_posix()
        cached = previous.get(rel)
        if cached is not None and cached[0] == info.st_mtime_ns and cached[1] == info.st_size:
            tags = cached[2]
        else:
            try:
                tags = frozenset(note_tags(real.read_bytes().decode("utf-8", errors="replace")))
            except OSError:
                return None
        index[rel] = (info.st_mtime_ns, info.st_size, tags)
        return rel, real, tags

    def _store_index(self, index: dict[str, tuple[int, int, frozenset[str]]]) -> None:
        with self._index_lock:
            self._tag_index = index


# --- Local REST API plugin -------------------------------------------------------


def _tls_context(ca_cert: str | None, verify: bool) -> ssl.SSLContext | bool:
    if ca_cert:
        # Pinning: trust the plugin's certificate (or its CA) and nothing else.
        try:
            return ssl.create_default_context(cafile=ca_cert)
        except (OSError, ssl.SSLError):
            raise StoreUnavailable(MSG_CA_UNREADABLE.format(path=ca_cert)) from None
    if not verify:
        logger.warning(
            "OBSIDIAN_TLS_VERIFY=false: the Obsidian API certificate is NOT checked. "
            "This is unsafe; set OBSIDIAN_CA_CERT to the plugin's certificate instead."
        )
        return False
    return ssl.create_default_context()


def _is_tls_refusal(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return "CERTIFICATE_VERIFY_FAILED" in str(exc)


def _js_case_insensitive(tag: str) -> str:
    """A JavaScript-compatible pattern matching tag in any case ([mM][aA]...)."""
    out = []
    for char in tag:
        lower, upper = char.lower(), char.upper()
        if lower != upper and len(lower) == 1 and len(upper) == 1:
            out.append(f"[{lower}{upper}]")
        elif char.isalnum() or char in "_-/":
            # Plain in both dialects outside a class; no escape needed.
            out.append(char)
        else:
            out.append(re.escape(char))
    return "".join(out)


def tag_search_query(tag: str) -> dict:
    """The JsonLogic body of POST /search/ finding notes tagged `tag` (nested included).

    The plugin evaluates it per note against {tags, frontmatter, path, content,
    stat}; `tags` holds inline tags and array front-matter tags without '#',
    and `frontmatter.tags` adds the string form ("tags: makilab"). The filter
    result is the list of matching tags, truthy when not empty.
    """
    pattern = f"(?:^|[\\s,])#?{_js_case_insensitive(tag)}(?:$|[\\s,/])"
    return {
        "filter": [
            {"merge": [{"var": "tags"}, {"var": "frontmatter.tags"}]},
            {"regexp": [pattern, {"var": ""}]},
        ]
    }


class LocalRestApiProvider:
    """Notes read through Obsidian's Local REST API plugin (HTTPS, bearer key)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        ca_cert: str | None = None,
        verify: bool = True,
        timeout: float = 2.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._client = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}"},
            verify=_tls_context(ca_cert, verify),
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            # A loopback service: proxies and SSL_* variables must not reroute it.
            trust_env=False,
        )

    def close(self) -> None:
        self._client.close()

    def read(self, path: str) -> Note:
        rel = note_path_normalize(path)
        url = "/vault/" + "/".join(quote(part, safe="") for part in rel.split("/"))
        response = self._request("GET", url, headers={"Accept": "text/markdown"})
        if response.status_code == 404:
            raise NoteNotFound(MSG_NOT_FOUND.format(path=rel))
        self._raise_for_status(response)
        text = response.content[:MAX_NOTE_BYTES].decode("utf-8", errors="replace")
        return note_build(path=rel, text=text, source="fixed")

    def find_tagged(self, tag: str, *, limit: int | None = None) -> list[Note]:
        wanted = tag_normalize(tag)
        if not wanted:
            return []
        response = self._request(
            "POST",
            "/search/",
            content=json.dumps(tag_search_query(wanted)).encode(),
            headers={"Content-Type": JSONLOGIC_CONTENT_TYPE, "Accept": "application/json"},
        )
        self._raise_for_status(response)
        try:
            items = response.json()
            paths = sorted(
                {
                    item["filename"]
                    for item in items
                    if isinstance(item.get("filename"), str)
                    and item["filename"].lower().endswith(NOTE_SUFFIX)
                }
            )
        except (ValueError, TypeError, AttributeError, KeyError):
            raise StoreUnavailable(MSG_BAD_RESPONSE) from None
        notes: list[Note] = []
        for path in paths:
            if limit is not None and len(notes) >= limit:
                break
            try:
                notes.append(replace(self.read(path), source="tag"))
            except (NoteNotFound, UnsafeNotePath):
                continue  # deleted since the search, or a name we refuse
        return notes

    def _request(self, method: str, url: str, **kwargs) -> httpx.Response:
        try:
            response = self._client.request(method, url, **kwargs)
        except httpx.TimeoutException:
            raise StoreUnavailable(MSG_TIMEOUT.format(seconds=self.timeout)) from None
        except httpx.HTTPError as exc:
            if _is_tls_refusal(exc):
                raise StoreUnavailable(MSG_TLS_REFUSED) from None
            raise StoreUnavailable(MSG_UNREACHABLE.format(detail=type(exc).__name__)) from None
        if response.status_code in (401, 403):
            raise StoreUnavailable(MSG_UNAUTHORIZED.format(status=response.status_code))
        return response

    @staticmethod
    def _raise_for_status(response: httpx.Response) -> None:
        if response.status_code >= 400:
            raise StoreUnavailable(MSG_HTTP_ERROR.format(status=response.status_code))


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
                if isinstance(old, LocalRestApiProvider):
                    old.close()
            _providers.clear()
            _providers[key] = provider
    return provider
