"""The embedded notes source: an Obsidian vault as a local folder (OBSIDIAN_VAULT_PATH).

Reads stay inside the vault (symbolic links leading out are refused) and within
size limits, and only regular files are read (a named pipe would block the reader);
the tag index is kept per file and re-read when a file changes. A file the system
refuses is reported with a French reason, never the system's English text.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from memory.error_reasons import os_error_reason
from memory.exceptions import NoteNotFound, StoreUnavailable, UnsafeNotePath
from memory.stores.notes import (
    MAX_NOTE_BYTES,
    MSG_NOT_FOUND,
    MSG_PATH_OUTSIDE,
    MSG_UNREADABLE,
    MSG_VAULT_MISSING,
    NOTE_SUFFIX,
    Note,
    note_build,
    note_path_normalize,
    note_tags,
    tag_matches,
    tag_normalize,
)

logger = logging.getLogger(__name__)

# Scanning a vault for tags: files looked at, and files too big to read.
MAX_SCAN_FILES = 2000
MAX_SCAN_BYTES = 512 * 1024
# A folder's listing is kept only when it was taken at least this long after the
# folder's mtime: a change within the same tick of the file system's clock as the
# one before keeps its mtime, and a listing taken within that tick may miss it.
MARKER_RACY_NS = 2_000_000_000

# (st_mtime_ns, st_size) of a note; what a note that cannot be read stamps.
NoteStamp = tuple[int, int]
STAMP_MISSING: NoteStamp = (-1, -1)

REASON_NOT_A_FILE = "ce n'est pas un fichier"


def _now_ns() -> int:
    return time.time_ns()


class _Listing(NamedTuple):
    mtime: int  # the folder's mtime when listed
    listed_at: int  # _now_ns() then
    folders: tuple[str, ...]  # the sub-folders to walk, in order
    names: int  # a hash of the other names in it


def _stamp(info: os.stat_result, now: int) -> NoteStamp | None:
    """(mtime_ns, size), or None within MARKER_RACY_NS of the mtime: a second save in
    the same tick of the file system's clock, of the same size, would not move it."""
    if now - info.st_mtime_ns < MARKER_RACY_NS:
        return None
    return info.st_mtime_ns, info.st_size


def _resolved(path: Path, *, strict: bool = False) -> Path:
    """path.resolve(); a symlink loop raises OSError(ELOOP), not Python 3.11's RuntimeError."""
    try:
        return path.resolve(strict=strict)
    except RuntimeError:
        raise OSError(errno.ELOOP, "symlink loop", os.fspath(path)) from None


def _read_limited(
    file_path: Path, shown_path: str, limit: int = MAX_NOTE_BYTES
) -> tuple[str, NoteStamp | None]:
    """The first `limit` bytes of a regular file, decoded, and its stamp; else NoteNotFound.

    Opened without blocking and checked on the open descriptor (no race with a rename):
    a named pipe or a device named like a note would otherwise hold the reader forever.
    """
    now = _now_ns()
    try:
        with os.fdopen(os.open(file_path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise NoteNotFound(MSG_UNREADABLE.format(path=shown_path, reason=REASON_NOT_A_FILE))
            data = handle.read(limit)
    except (FileNotFoundError, NotADirectoryError):
        raise NoteNotFound(MSG_NOT_FOUND.format(path=shown_path)) from None
    except OSError as exc:
        reason = os_error_reason(exc)
        raise NoteNotFound(MSG_UNREADABLE.format(path=shown_path, reason=reason)) from None
    return data.decode("utf-8", errors="replace"), _stamp(info, now)


def _folder_listing(dirpath: str, mtime: int, now: int) -> _Listing | None:
    """One folder's listing; None if it cannot be listed. Hidden sub-folders (.obsidian,
    .trash, .git) are not walked, nor folders reached through a symbolic link."""
    folders: list[str] = []
    names: list[str] = []
    try:
        with os.scandir(dirpath) as entries:
            for entry in entries:
                try:
                    walk_into = entry.is_dir(follow_symlinks=False)
                except OSError:
                    walk_into = False
                if not walk_into:
                    names.append(entry.name)
                elif not entry.name.startswith("."):
                    folders.append(entry.name)
    except OSError:
        return None
    return _Listing(
        mtime,
        now,
        tuple(os.path.join(dirpath, name) for name in sorted(folders)),
        hash(tuple(sorted(names))),
    )


class VaultFolderProvider:
    """Notes read straight from a vault folder on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        # rel path -> (mtime_ns, size, tags): a re-scan only reads changed files.
        self._tag_index: dict[str, tuple[int, int, frozenset[str]]] = {}
        self._index_lock = threading.Lock()
        # Each folder's last listing (change_marker).
        self._listings: dict[str, _Listing] = {}
        self._marker_lock = threading.Lock()

    def _real_root(self) -> Path:
        try:
            root = _resolved(self.root, strict=True)
        except OSError:
            raise StoreUnavailable(MSG_VAULT_MISSING.format(root=self.root)) from None
        if not root.is_dir():
            raise StoreUnavailable(MSG_VAULT_MISSING.format(root=self.root))
        return root

    def change_marker(self) -> tuple:
        """What changes when a note appears or leaves: the vault's folders, their mtimes
        and the names in each (hidden folders left out).

        Read before every message's context notes, so it lists only what may have
        changed: a file created, deleted or renamed changes its folder's mtime, and a
        folder whose mtime has not moved keeps its last listing (one stat a folder
        instead of a listing of every note: 2,400 notes in 81 folders, 2.15 -> 0.19
        ms of CPU a message). A listing taken within MARKER_RACY_NS of its folder's
        mtime is taken again: a second change within the same tick of the file
        system's clock leaves the mtime as it was. The context-notes cache holds a
        result only while the marker is the same, so a note that appears is found
        at once, not after the cache's lifetime.
        """
        now = _now_ns()
        with self._marker_lock:
            listings: dict[str, _Listing] = {}
            marker = []
            pending = [os.fspath(self.root)]
            while pending:
                dirpath = pending.pop()
                try:
                    mtime = os.stat(dirpath).st_mtime_ns
                except OSError:
                    continue
                listing = self._listings.get(dirpath)
                if (
                    listing is None
                    or listing.mtime != mtime
                    or listing.listed_at - mtime < MARKER_RACY_NS
                ):
                    listing = _folder_listing(dirpath, mtime, now)
                    if listing is None:
                        continue
                listings[dirpath] = listing
                marker.append((dirpath, mtime, listing.names))
                pending.extend(reversed(listing.folders))  # walked in order
            self._listings = listings
        return tuple(marker)

    def note_stamps(self, paths: Iterable[str]) -> dict[str, NoteStamp | None]:
        """Each note's stamp now, by its vault-relative path as read() gives it
        (Note.path): STAMP_MISSING when it cannot be stat'ed, None when too recent
        to be trusted. An in-place save moves its note's stamp, not its folder's
        mtime: the context-notes cache checks these beside change_marker()."""
        now = _now_ns()
        root = os.fspath(self.root)
        stamps: dict[str, NoteStamp | None] = {}
        for path in paths:
            try:
                # Not os.path.join: it costs as much as the stat (paths are relative).
                stamps[path] = _stamp(os.stat(f"{root}/{path}"), now)
            except OSError:
                stamps[path] = STAMP_MISSING
        return stamps

    def read(self, path: str) -> Note:
        rel = note_path_normalize(path)
        root = self._real_root()
        try:
            real = _resolved(root.joinpath(*rel.split("/")))
        except OSError as exc:
            reason = os_error_reason(exc)
            raise NoteNotFound(MSG_UNREADABLE.format(path=rel, reason=reason)) from None
        if not real.is_relative_to(root):
            raise UnsafeNotePath(MSG_PATH_OUTSIDE)
        text, stamp = _read_limited(real, rel)
        return note_build(path=rel, text=text, source="fixed", stamp=stamp)

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
                text, stamp = _read_limited(real, rel)
            except NoteNotFound:
                continue  # deleted since the scan
            notes.append(note_build(path=rel, text=text, source="tag", stamp=stamp))
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
        try:
            real = _resolved(full_path) if full_path.is_symlink() else full_path
            info = real.stat()
        except OSError:  # a symlink loop, or gone since the listing
            return None
        if real is not full_path and not real.is_relative_to(root):
            logger.info("Skipping %s: a symlink leaving the vault.", full_path)
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SCAN_BYTES:
            return None
        rel = full_path.relative_to(root).as_posix()
        cached = previous.get(rel)
        if cached is not None and cached[0] == info.st_mtime_ns and cached[1] == info.st_size:
            tags = cached[2]
        else:
            try:
                text, _ = _read_limited(real, rel, MAX_SCAN_BYTES)
            except NoteNotFound:  # replaced by a pipe, unreadable, gone
                return None
            tags = frozenset(note_tags(text))
        if _stamp(info, _now_ns()) is not None:
            # Kept by its stamp only once the clock's tick of its last save is over (QA 6: a
            # tag taken off by a save of the same size within that tick stayed, for good).
            index[rel] = (info.st_mtime_ns, info.st_size, tags)
        return rel, real, tags

    def _store_index(self, index: dict[str, tuple[int, int, frozenset[str]]]) -> None:
        with self._index_lock:
            self._tag_index = index
